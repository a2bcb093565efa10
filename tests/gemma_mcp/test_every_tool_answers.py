"""Every MCP tool answers a valid minimal call through the official SDK, and its answer matches its own schema.

Why: the `adapters` tool failed every call with an output validation error (its result was declared as a
union of two models, which the SDK wraps as `{"result": ...}`), and only its name was tested. Here each
tool the server lists (the cloud-changing ones included) gets one valid call against the suite's fakes
(a vLLM-shaped server, Google's APIs, Pulumi); the answer must not be an error, and its structured content
is checked again on the client side against the output schema the tool publishes, with jsonschema. A new
tool without an entry in CALLS fails the test until it gets one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import jsonschema
import pytest

from gemma_mcp.results import AdaptersRun
from gemma_mcp.runner import Completed
from remote.google_client import GoogleApis
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from tests.gemma_mcp.conftest import FakePulumi, connect, make_context, text_of
from tests.gemma_mcp.test_changes import L4_RUN, RecordingRunner
from tests.gemma_mcp.test_tools_verify import TRUSTED_RUN
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, Project
from tests.verify.ops.test_logs import ENTRIES, entry
from tests.verify.ops.test_status import REVISIONS, SERVICES
from tests.verify.test_memory_command import GPU_LINES
from tests.verify.test_models_command import BUCKET, install_bucket, marker_body
from verify.adapters.promote import PromotionReport, PromotionsReport

# Each tool's valid minimal call; "{url}" stands for the fake vLLM server's address.
CALLS: dict[str, dict[str, Any]] = {
    "stacks": {},
    "plan": {"stack": "l4"},
    "fit": {"model": "gemma-4-12b-it", "variant": "bf16", "shape": "v6e-1"},
    "outputs": {"stack": "l4"},
    "advise": {"prompt_tokens": 1024, "output_tokens": 128, "users": 4, "slo": ["p95_ttft_ms=5000"], "top": 2},
    "health": {"url": "{url}", "model": "tiny-gemma", "wait_s": 10},
    "query": {"url": "{url}", "model": "tiny-gemma", "prompt": "hello", "max_tokens": 8},
    "metrics": {"url": "{url}"},
    "adapters": {"action": "list", "url": "{url}", "model": "tiny-gemma"},
    "bench": {
        "url": "{url}",
        "model": "tiny-gemma",
        "concurrency": [1],
        "context": [64],
        "max_tokens": 4,
        "requests_per_cell": 2,
        "wall_time_s": 60,
    },
    "compare": {"a": str(TRUSTED_RUN), "b": str(TRUSTED_RUN)},
    "preflight": {"stack": "l4", "project": PROJECT},
    "status": {"stack": "l4", "project": PROJECT},
    "logs": {"stack": "l4", "project": PROJECT},
    "memory": {"stack": "l4", "project": PROJECT},
    "models": {"stack": "l4"},
    "deploy": {"stack": "l4", "confirm": "l4"},
    "destroy": {"stack": "l4", "confirm": "l4"},
    "run_weight_import": {"stack": "l4", "role": "target", "confirm": "l4"},
    "promote": {"stack": "l4", "confirm": "l4"},
}
# The tools whose call runs `python -m verify promote` against a deployed stack: answered by a recording
# runner (tests/gemma_mcp/test_changes.py) rather than the real command, which would need Pulumi's CLI.
RECORDED = {"promote"}


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        Project().install(server)
        server.route("GET", SERVICES, {"services": [fixture("run_service_failed.json")]})
        server.route("GET", REVISIONS, fixture("run_revisions_failed.json"))
        server.route("POST", ENTRIES, {"entries": [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)]})
        install_bucket(server, marker_body())
        yield server


def _with_url(arguments: dict[str, Any], url: str) -> dict[str, Any]:
    return {key: url if value == "{url}" else value for key, value in arguments.items()}


async def test_every_tool_answers_a_valid_call_matching_its_schema(google: FakeGoogle) -> None:
    """Guards against a tool that is listed but cannot answer: every listed tool has a call here, none is an
    error, and each structured answer validates against the schema the tool publishes."""
    pulumi = FakePulumi(
        outputs_by_stack={"l4": {"modelBucket": BUCKET, "endpoint": "https://x.run.app"}},
        urns=["urn:pulumi:l4::gemma-serving::gcp:storage/bucket:Bucket::gemma-l4-models-bucket", L4_RUN],
    )
    base = dataclasses.replace(
        make_context(allow_changes=True, pulumi=pulumi), google=lambda: GoogleApis(tokens, api_root=google.url)
    )
    config = FakeVllmConfig(count_prompt_words=True, pieces=tuple(f" w{i}" for i in range(4)), ttft_s=0.05)
    failures: dict[str, str] = {}
    async with FakeVllm(config) as server, connect(base) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == sorted(CALLS), "every listed tool needs a valid call in CALLS (and no stale entry)"
        for name, arguments in CALLS.items():
            if name in RECORDED:
                continue
            result = await client.call_tool(name, _with_url(arguments, server.url))
            failures.update(_problems(name, result, tools[name].output_schema))
    for name in RECORDED:
        async with connect(dataclasses.replace(base, run_module=RecordingRunner())) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool(name, CALLS[name])
            failures.update(_problems(name, result, tools[name].output_schema))
    assert failures == {}


def _problems(name: str, result: Any, schema: dict[str, Any] | None) -> dict[str, str]:
    if result.is_error:
        return {name: f"error: {text_of(result)[:300]}"}
    if schema is None or result.structured_content is None:
        return {name: "no output schema or no structured content"}
    try:
        jsonschema.validate(result.structured_content, schema)
    except jsonschema.ValidationError as invalid:
        return {name: f"does not match its schema at {list(invalid.absolute_path)}: {invalid.message[:200]}"}
    return {}


def test_each_adapters_action_has_one_object_schema() -> None:
    """Guards against the adapters tool's old declaration (a union wrapped as `result`): its schema is one
    object whose fields hold the list and the check reports."""
    schema = AdaptersRun.model_json_schema()
    assert schema["type"] == "object"
    assert {"action", "listing", "check", "exit_code"} <= set(schema["properties"])


@dataclasses.dataclass
class PromotingRunner:
    """Stands in for `python -m verify adapters promote` (it needs a deployed stack's route table and Pulumi's
    CLI): records the arguments and prints the report the command prints."""

    calls: list[list[str]] = dataclasses.field(default_factory=list)

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        self.calls.append([module, *args])
        report = PromotionReport(
            adapter="support-bot", version="v4", previous="v3", routes="gs://b/adapter-routes.json", promoted=True
        )
        return Completed(exit_code=0, stdout=PromotionsReport(promotions=[report]).model_dump_json(), stderr="")


async def test_every_adapters_action_answers_through_the_sdk() -> None:
    """Guards against an action that only its name is tested for: list, check (its probes and tensor check
    against a vLLM-shaped server) and promote (confirmed, on a server allowing changes) each answer with
    structured content matching the tool's schema."""
    config = FakeVllmConfig(pieces=(" Enterprise",), ttft_s=0.01)
    runner = PromotingRunner()
    async with FakeVllm(config) as server:
        async with connect(make_context()) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            check = await client.call_tool(
                "adapters",
                {
                    "action": "check",
                    "name": "support-bot@v4",
                    "url": server.url,
                    "model": "tiny-gemma",
                    "prompts": ["hi"],
                },
            )
        assert _problems("adapters", check, tools["adapters"].output_schema) == {}
        assert check.structured_content is not None
        assert check.structured_content["action"] == "check"
    async with connect(dataclasses.replace(make_context(allow_changes=True), run_module=runner)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        promoted = await client.call_tool(
            "adapters",
            {
                "action": "promote",
                "name": "support-bot",
                "stack": "gemma4-12b-adapters-l4",
                "confirm": "gemma4-12b-adapters-l4",
            },
        )
    assert _problems("adapters", promoted, tools["adapters"].output_schema) == {}
    assert promoted.structured_content is not None
    assert promoted.structured_content["promotion"]["promotions"][0]["version"] == "v4"
    assert runner.calls[0][:5] == ["verify", "adapters", "promote", "support-bot", "--stack"]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"action": "check", "name": "-h", "url": "{url}"}, "not an adapter name"),
        ({"action": "check", "name": "--all", "url": "{url}"}, "not an adapter name"),
        ({"action": "promote", "name": "--rollback", "stack": "l4", "confirm": "l4"}, "not an adapter name"),
        ({"action": "promote", "name": "support-bot", "stack": "l4", "confirm": "l4"}, "--allow-changes"),
        ({"action": "check", "name": "support-bot", "url": "{url}", "version": "v2"}, "action='promote' only"),
    ],
)
async def test_option_like_names_and_unallowed_promotions_are_refused(arguments: dict[str, Any], why: str) -> None:
    """Guards against `name: "-h"` reaching argparse (or a name that is a flag), and a promotion from a server
    that was not started to change anything."""
    async with connect(make_context()) as client:
        result = await client.call_tool("adapters", _with_url(arguments, "http://127.0.0.1:9"))
    assert result.is_error
    assert why in text_of(result)


async def test_a_promotion_needs_the_stacks_name_confirmed_and_never_a_url() -> None:
    """Moving an adapter's users to another version is a change: confirmed, on the stack's own route table."""
    runner = PromotingRunner()
    async with connect(dataclasses.replace(make_context(allow_changes=True), run_module=runner)) as client:
        unconfirmed = await client.call_tool("adapters", {"action": "promote", "name": "support-bot", "stack": "l4"})
        by_url = await client.call_tool(
            "adapters", {"action": "promote", "name": "support-bot", "url": "http://127.0.0.1:9", "confirm": "l4"}
        )
    assert unconfirmed.is_error
    assert "confirm='l4'" in text_of(unconfirmed)
    assert by_url.is_error
    assert runner.calls == []
