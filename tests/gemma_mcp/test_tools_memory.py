"""The memory tool against the local fake of Cloud Logging: vLLM's start-up lines beside the plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from remote.google_client import GoogleApis
from tests.gemma_mcp.conftest import connect, make_context, text_of
from tests.verify.ops.google_fake import FakeGoogle, tokens
from tests.verify.ops.scenarios import PROJECT
from tests.verify.ops.test_logs import ENTRIES, entry
from tests.verify.test_memory_command import GPU_LINES


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


async def test_memory_shows_vllms_numbers_beside_the_plan(fake: FakeGoogle) -> None:
    """The agent asks "what is the memory layout": vLLM's own KV numbers, the plan's, and the error."""
    entries = [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)]
    fake.route("POST", ENTRIES, {"entries": list(reversed(entries))})
    ctx = dataclasses.replace(make_context(), google=lambda: GoogleApis(tokens, api_root=fake.url))
    async with connect(ctx) as client:
        result = await client.call_tool("memory", {"stack": "l4", "project": PROJECT})
    assert not result.is_error, result.content
    found = result.structured_content
    assert (found["exit_code"], found["passed"]) == (0, True)
    rows = {row["quantity"]: row for row in found["report"]["rows"]}
    assert rows["KV cache size"]["measured"] == 92_432
    assert rows["KV cache size"]["planned"] > 0
    assert "available KV cache memory: planned" in text_of(result)
    assert all(seen.method == "POST" and seen.path.endswith("entries:list") for seen in fake.seen)


async def test_memory_refuses_a_bad_since() -> None:
    async with connect() as client:
        result = await client.call_tool("memory", {"stack": "l4", "project": PROJECT, "since": "forever"})
    assert result.is_error
    assert "--since" in text_of(result)
