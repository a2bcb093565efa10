"""The stack tools through a real MCP client session: names, plans, fit and outputs as an agent sees them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from preview.stack_file import available_stacks
from tests.deploy.test_stack_outputs import stack_output_json
from tests.gemma_mcp.conftest import ROOT, FakePulumi, connect, make_context, text_of
from tests.preview_cli import SHARES_SHIPPED_PLANS

READ_ONLY_TOOLS = {
    "stacks",
    "plan",
    "fit",
    "outputs",
    "health",
    "bench",
    "compare",
    "preflight",
    "status",
    "logs",
    "query",
    "metrics",
    "models",
    "memory",
    "adapters",
    "advise",
}
CHANGING_TOOLS = {"deploy", "destroy", "run_weight_import"}


async def test_tools_are_listed_with_schemas_and_read_only_hints() -> None:
    """An agent must see every read-only tool with typed inputs, an output schema and an honest read-only hint."""
    async with connect() as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == READ_ONLY_TOOLS
    for tool in listed.values():
        assert tool.output_schema is not None, tool.name
        assert tool.annotations is not None, tool.name
        assert tool.annotations.read_only_hint, tool.name
        assert len(tool.description or "") > 80, tool.name
    assert set(listed["bench"].input_schema["properties"]) >= {"stack", "url", "concurrency", "context", "wall_time_s"}


async def test_stacks_lists_every_stack_file_with_its_platform() -> None:
    """Without the list an agent would guess stack names; each must come with accelerator, region and model."""
    async with connect() as client:
        result = await client.call_tool("stacks", {})
    assert not result.is_error
    stacks = {entry["name"]: entry for entry in result.structured_content["stacks"]}
    assert set(stacks) == set(available_stacks(ROOT))
    assert {"l4", "rtx6000", "tpu-v6e"} <= set(stacks)
    assert stacks["gke-tpu-v6e"]["platform"] == "gke"
    assert (
        stacks["l4"] | {"valid": True, "accelerator": "nvidia-l4", "platform": "cloud-run", "region": "us-east4"}
        == stacks["l4"]
    )
    assert stacks["tpu-v6e"]["platform"] == "tpu"
    assert stacks["tpu-v6e"]["zone"] == "us-east5-a"
    assert "tpu-v6e: tpu-v6e on tpu in us-east5-a" in text_of(result)


async def test_an_invalid_stack_file_is_listed_with_the_clis_messages(tmp_path: Path) -> None:
    """A broken stack file must show up as invalid with the settings' own message, not vanish or crash the tool."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = (ROOT / "Pulumi.l4.yaml").read_text(encoding="utf-8").replace("maxNumSeqs: 64", "maxNumSeqs: -3")
    assert "maxNumSeqs: -3" in text
    (tmp_path / "Pulumi.broken.yaml").write_text(text, encoding="utf-8")
    async with connect(make_context(root=tmp_path)) as client:
        result = await client.call_tool("stacks", {})
    (entry,) = result.structured_content["stacks"]
    assert entry["name"] == "broken"
    assert entry["valid"] is False
    assert any("maxNumSeqs" in problem for problem in entry["problems"])


@SHARES_SHIPPED_PLANS
async def test_plan_returns_resources_outputs_and_the_vllm_command() -> None:
    """The agent's plan must be the offline preview's: the same resources and the full vllm serve arguments."""
    async with connect() as client:
        result = await client.call_tool("plan", {"stack": "l4"})
    assert not result.is_error, result.content
    plan = result.structured_content
    types = {resource["type"] for resource in plan["resources"]}
    assert "gcp:cloudrunv2/service:Service" in types
    assert plan["resource_count"] == len(plan["resources"])
    assert plan["outputs"]["accelerator"] == "nvidia-l4"
    assert "--max-num-seqs" in plan["vllm_command"]
    assert plan["inputs"] is None
    assert "capacity" in plan["sections"]
    text = text_of(result)
    assert "per instance:  $1.42/h" in text, "the agent reads the cost the CLI prints"
    assert "KV budget" in text
    assert "INFO: the stated workload fits" in text, "and the planner's verdicts"


async def test_plan_of_an_unknown_stack_gives_the_clis_message() -> None:
    """A mistyped stack name must come back as the CLI's message listing the real names."""
    async with connect() as client:
        result = await client.call_tool("plan", {"stack": "l44"})
    assert result.is_error
    assert f"no stack file Pulumi.l44.yaml; stacks here: {', '.join(available_stacks(ROOT))}" in text_of(result)


@SHARES_SHIPPED_PLANS
async def test_fit_gives_the_planners_verdict() -> None:
    """The fit tool must report the planner's numbers for the stack, not a guess."""
    async with connect() as client:
        result = await client.call_tool("fit", {"stack": "l4"})
    assert not result.is_error
    fit = result.structured_content
    assert fit["verdict"].startswith("fits")
    assert fit["capacity"]["maxNumSeqs"] == 64
    assert fit["capacity"]["capacityTokens"] > 0


async def test_outputs_never_carry_a_secret_value() -> None:
    """A deployed stack's secret outputs (the TPU API key's secret) must be named, never shown."""
    pulumi = FakePulumi(outputs_by_stack={"tpu-v6e": {"endpoint": "http://10.0.0.2:8000", "apiKeySecret": "[secret]"}})
    async with connect(make_context(pulumi=pulumi)) as client:
        result = await client.call_tool("outputs", {"stack": "tpu-v6e"})
    found = result.structured_content
    assert found is not None
    assert found["outputs"] == {"endpoint": "http://10.0.0.2:8000", "apiKeySecret": "[secret]"}
    assert found["secret_outputs"] == ["apiKeySecret"]
    # Partial outputs are still shown, with what the contract misses.
    assert found["platform"] is None
    assert found["contract_problems"]


@pytest.fixture(scope="module", params=["l4", "tpu-v6e"])
def rendered_outputs(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """A stack's outputs as `pulumi stack output --json` shows them, rendered outside the tools' event loop."""
    stack = str(request.param)
    return stack, stack_output_json(stack)


async def test_outputs_are_checked_against_the_contract(rendered_outputs: tuple[str, dict[str, Any]]) -> None:
    """An agent reading outputs must learn when a stack lacks what verify and promote read (an older deploy)."""
    stack, whole = rendered_outputs
    partial = {key: value for key, value in whole.items() if key != "maxNumSeqs"}
    pulumi = FakePulumi(
        outputs_by_stack={stack: whole},
    )
    async with connect(make_context(pulumi=pulumi)) as client:
        complete = (await client.call_tool("outputs", {"stack": stack})).structured_content
        pulumi.outputs_by_stack[stack] = partial
        result = await client.call_tool("outputs", {"stack": stack})
    assert complete is not None
    assert complete["platform"] == whole["platform"]
    assert complete["contract_problems"] == []
    assert result.structured_content is not None
    assert any("maxNumSeqs" in problem for problem in result.structured_content["contract_problems"])
    assert "maxNumSeqs" in text_of(result)


async def test_fit_without_a_stack_answers_from_the_catalog() -> None:
    """An agent asks "does the 31B fit a v6e-8?" without writing a stack file, and gets the matrix's answer."""
    async with connect() as client:
        result = await client.call_tool("fit", {"model": "gemma-4-31b-it", "variant": "bf16", "shape": "v6e-8"})
    assert not result.is_error
    fit = result.structured_content
    assert fit["stack"] is None
    assert fit["verdict"] == "fits"
    (row,) = fit["combinations"]
    assert row["kvTokens"] > 0
    assert "ceilings (not measurements)" in text_of(result)
    async with connect() as client:
        missing = await client.call_tool("fit", {"model": "gemma-4-31b-it"})
    assert missing.is_error
