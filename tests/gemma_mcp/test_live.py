"""The health and bench tools against a real vLLM server (the ``live_server`` fixture, as tests/verify/test_live.py).

Skipped unless a server is named (VERIFY_LIVE_URL, VERIFY_LIVE_MODEL: the served name) or started by
``make test-live``. With the CPU vLLM serving tiny-gemma already:

    VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma \\
        .venv/bin/python -m pytest tests/gemma_mcp/test_live.py -q
"""

from __future__ import annotations

import pytest

from tests.gemma_mcp.conftest import connect, remove_files
from tests.live.server import RunningServer

pytestmark = pytest.mark.live


@pytest.fixture
def target(live_server: RunningServer) -> dict[str, str]:
    return {"url": live_server.base_url, **({"model": live_server.model} if live_server.model else {})}


async def test_live_health_tool_passes(target: dict[str, str]) -> None:
    """Through MCP, a real vLLM must pass all six checks, with its real version in the report."""
    async with connect() as client:
        result = await client.call_tool("health", {**target, "wait_s": 60})
    report = result.structured_content
    assert report["passed"] is True, result.content
    assert report["report"]["vllm_version"]


async def test_live_bench_and_compare_tools(target: dict[str, str]) -> None:
    """Through MCP, a small real sweep must measure every request, and compare must read its results."""
    async with connect() as client:
        result = await client.call_tool(
            "bench",
            {**target, "concurrency": [1, 4], "context": [128], "max_tokens": 16, "requests_per_cell": 8},
        )
        run = result.structured_content
        try:
            assert run["passed"] is True, result.content
            assert [cell["completed"] for cell in run["report"]] == [8, 8]
            assert all(cell["output_throughput"] > 0 for cell in run["report"])
            compared = await client.call_tool("compare", {"a": run["results_file"], "b": run["results_file"]})
            assert [row["status"] for row in compared.structured_content["cells"]] == ["compared", "compared"]
        finally:
            remove_files([run["results_file"], *run["report_files"]])


async def test_live_query_and_metrics_tools(target: dict[str, str]) -> None:
    """Through MCP, a real vLLM must answer a prompt with its numbers, and its own histograms must show it."""
    async with connect() as client:
        asked = await client.call_tool("query", {**target, "prompt": "hello", "max_tokens": 8})
        read = await client.call_tool("metrics", target)
    answer = asked.structured_content
    assert answer["passed"] is True, asked.content
    assert answer["report"]["completion_tokens"] == 8
    assert answer["report"]["ttft_ms"] > 0
    latency = read.structured_content["report"]["latency"]
    assert latency["ttft"]["count"] >= 1
    assert latency["e2e"]["mean_ms"] > 0
