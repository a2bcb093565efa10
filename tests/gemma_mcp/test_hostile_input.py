"""An agent talked into mischief: arguments the tools must refuse, with the reason, before anything runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import pytest

from gemma_mcp.context import ServerContext
from gemma_mcp.runner import Completed
from gemma_mcp.urls import check_url
from remote.google_client import GoogleApis
from tests.gemma_mcp.conftest import FakePulumi, connect, make_context, text_of
from tests.verify.ops.google_fake import FakeGoogle, tokens


class RecordingRunner:
    """Records every child the server would start; each one "passes" at once."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        self.calls.append([module, *args])
        return Completed(0, '{"checks": []}', "")


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def _context(runner: RecordingRunner, **changes: object) -> ServerContext:
    pulumi = FakePulumi(
        outputs_by_stack={
            "l4": {
                "endpoint": "https://gemma-l4-vllm-abc-uk.a.run.app",
                "candidateUrl": "https://candidate---x.a.run.app",
            }
        }
    )
    return dataclasses.replace(make_context(pulumi=pulumi), run_module=runner, **changes)  # type: ignore[arg-type]


async def test_an_unknown_argument_is_refused_naming_the_allowed_ones() -> None:
    """A misspelt `wait` was dropped silently and the default wait used; now it is refused by name."""
    runner = RecordingRunner()
    async with connect(_context(runner)) as client:
        result = await client.call_tool("health", {"url": "http://127.0.0.1:1", "wait": 5})
    assert result.is_error
    assert "unknown argument(s) wait" in text_of(result)
    assert "wait_s" in text_of(result)
    assert runner.calls == []


async def test_an_input_error_raised_inside_a_tool_reaches_the_agent_with_its_reason() -> None:
    """A results file that is not UTF-8 gave a bare "Error executing tool compare", without the reason."""
    from tests.gemma_mcp.conftest import ROOT

    broken = ROOT / "bench-results" / "test-not-utf8.jsonl"
    broken.parent.mkdir(exist_ok=True)
    broken.write_bytes(b"\xff\xfe")
    try:
        async with connect(_context(RecordingRunner())) as client:
            result = await client.call_tool("compare", {"a": str(broken), "b": str(broken)})
    finally:
        broken.unlink()
    assert result.is_error
    assert "can't decode" in text_of(result)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/computeMetadata/v1/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fe80::1]:8000",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0:8000",
        "http://user:secret@127.0.0.1:8000",
        "http://10.0.0.7:8000",
        "https://strangers-service-xyz-uc.a.run.app",
    ],
)
async def test_health_and_bench_refuse_urls_outside_the_allow_list(url: str) -> None:
    """The metadata server, link-local and private hosts and a stranger's *.run.app (which would get an ID
    token minted for it) were all accepted; none may be called now, and no child starts."""
    runner = RecordingRunner()
    async with connect(_context(runner)) as client:
        for tool in ("health", "bench"):
            result = await client.call_tool(tool, {"url": url})
            assert result.is_error, (tool, url)
            assert "secret" not in text_of(result)
    assert runner.calls == []


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000", "http://localhost:8000", "https://gemma-l4-vllm-abc-uk.a.run.app"]
)
async def test_loopback_and_the_projects_own_endpoints_are_allowed(url: str) -> None:
    """The allow-list must not stop the normal case: a local server or a stack this project deployed."""
    runner = RecordingRunner()
    async with connect(_context(runner)) as client:
        result = await client.call_tool("health", {"url": url, "wait_s": 1})
    assert not result.is_error, text_of(result)
    assert runner.calls[0][runner.calls[0].index("--url") + 1] == url


async def test_allow_any_url_opens_other_hosts_but_never_the_metadata_server() -> None:
    """--allow-any-url drops the allow-list only: link-local and metadata stay refused."""
    runner = RecordingRunner()
    async with connect(_context(runner, allow_any_url=True)) as client:
        private = await client.call_tool("health", {"url": "http://10.0.0.7:8000", "wait_s": 1})
        metadata = await client.call_tool("health", {"url": "http://169.254.169.254/", "wait_s": 1})
    assert not private.is_error
    assert metadata.is_error
    assert len(runner.calls) == 1


def test_a_name_resolving_to_the_metadata_address_is_refused_with_allow_any_url() -> None:
    """A DNS name pointing at 169.254.169.254 must not slip past the literal-address check."""
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError, match="resolves to a link-local"):
        check_url(
            "http://sneaky.example.com/", stack_endpoints=list, allow_any=True, resolve=lambda _h: ["169.254.169.254"]
        )


@pytest.mark.parametrize("tool", ["preflight", "status", "logs"])
async def test_a_project_argument_that_is_not_a_project_id_is_refused_before_any_google_call(
    fake: FakeGoogle, tool: str
) -> None:
    """`project: victim:setIamPolicy?x=` was pasted into API paths (preflight's read became a POST to
    setIamPolicy); it is refused with the accepted form and Google is never asked."""
    ctx = dataclasses.replace(make_context(), google=lambda: GoogleApis(tokens, api_root=fake.url))
    async with connect(ctx) as client:
        result = await client.call_tool(tool, {"stack": "l4", "project": "victim:setIamPolicy?x="})
    assert result.is_error
    assert "is not a Google Cloud project ID" in text_of(result)
    assert fake.seen == []


async def test_since_past_cloud_loggings_retention_is_a_tool_error_with_the_reason() -> None:
    """`since: 999999999d` overflowed inside the worker thread; it is refused with the cap."""
    async with connect(_context(RecordingRunner())) as client:
        result = await client.call_tool("logs", {"stack": "l4", "project": "proj-1", "since": "999999999d"})
    assert result.is_error
    assert "at most 3650d" in text_of(result)
