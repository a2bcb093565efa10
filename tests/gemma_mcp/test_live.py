"""The health and bench tools against a real vLLM server, when one is named (as tests/verify/test_live.py).

Skipped unless VERIFY_LIVE_URL is set (VERIFY_LIVE_MODEL: the served name). With the CPU vLLM serving tiny-gemma:

    VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma \\
        .venv/bin/python -m pytest tests/gemma_mcp/test_live.py -q
"""

from __future__ import annotations

import os

import pytest

from tests.gemma_mcp.conftest import connect, remove_files

LIVE_URL = os.environ.get("VERIFY_LIVE_URL")
LIVE_MODEL = os.environ.get("VERIFY_LIVE_MODEL")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not LIVE_URL, reason="set VERIFY_LIVE_URL to run the MCP tools against a real server"),
]


def _target() -> dict[str, str]:
    assert LIVE_URL is not None
    return {"url": LIVE_URL, **({"model": LIVE_MODEL} if LIVE_MODEL else {})}


async def test_live_health_tool_passes() -> None:
    """Through MCP, a real vLLM must pass all six checks, with its real version in the report."""
    async with connect() as client:
        result = await client.call_tool("health", {**_target(), "wait_s": 60})
    report = result.structured_content
    assert report["passed"] is True, result.content
    assert report["report"]["vllm_version"]


async def test_live_bench_and_compare_tools() -> None:
    """Through MCP, a small real sweep must measure every request, and compare must read its results."""
    async with connect() as client:
        result = await client.call_tool(
            "bench",
            {**_target(), "concurrency": [1, 4], "context": [128], "max_tokens": 16, "requests_per_cell": 8},
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


async def test_live_query_and_metrics_tools() -> None:
    """Through MCP, a real vLLM must answer a prompt with its numbers, and its own histograms must show it."""
    async with connect() as client:
        asked = await client.call_tool("query", {**_target(), "prompt": "hello", "max_tokens": 8})
        read = await client.call_tool("metrics", _target())
    answer = asked.structured_content
    assert answer["passed"] is True, asked.content
    assert answer["report"]["completion_tokens"] == 8
    assert answer["report"]["ttft_ms"] > 0
    latency = read.structured_content["report"]["latency"]
    assert latency["ttft"]["count"] >= 1
    assert latency["e2e"]["mean_ms"] > 0
