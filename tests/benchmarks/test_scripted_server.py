"""The scripted server: the truth the accuracy benchmark measures verify against must itself be right."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchmarks.scripted_server import Schedule, ServerRecord, summarize
from verify.streaming import Api, StreamRequest, StreamResult, measure_stream


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    command = [sys.executable, "-m", "benchmarks.scripted_server", "--ttft-ms", "30", "--itl-ms", "5", "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        yield str(json.loads(process.stdout.readline())["url"])
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


async def _one_stream(url: str, api: Api) -> tuple[StreamResult, dict[str, Any], dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url) as client:
        await client.post("/stats/reset")
        result = await measure_stream(client, StreamRequest(model="scripted", prompt="a b c", max_tokens=4, api=api))
        stats = (await client.get("/stats", params={"raw": "1"})).json()
        tokens = (await client.post("/tokenize", json={"prompt": "a b c"})).json()
    return result, stats, tokens


@pytest.mark.parametrize("api", [Api.CHAT, Api.COMPLETIONS])
def test_streams_follow_the_schedule_and_are_recorded(server: str, api: Api) -> None:
    """Guards against a truth that is wrong: a stream verify cannot parse, tokens written early, or
    records that do not match what was sent."""
    # A private loop, never installed as the thread's current one: the Pulumi mocks of the tests that
    # run after this module need the default loop untouched.
    loop = asyncio.new_event_loop()
    try:
        result, stats, tokens = loop.run_until_complete(_one_stream(server, api))
    finally:
        loop.close()
    assert result.ok, result.failure
    assert (result.output_tokens, result.content_chunks, len(result.itl_s)) == (4, 4, 3)
    assert stats["requests"] == 1
    (record,) = [ServerRecord(*row) for row in stats["records"]]
    assert record.tokens == 4
    # Never before its deadline: the first token at arrival + 30 ms, the last at arrival + 30 + 3 x 5 ms.
    assert record.ttft_s >= 0.030
    assert record.last_write - record.arrival >= 0.045
    # The client cannot see the first token before the server wrote it.
    assert result.ttft_s is not None
    assert result.ttft_s >= record.ttft_s
    assert tokens["count"] == 3


def test_deadlines_are_absolute() -> None:
    """Guards against drift: token k is due at arrival + TTFT + k x gap, whatever happened before."""
    schedule = Schedule(ttft_s=0.1, itl_s=0.01)
    assert schedule.deadline(5.0, 0) == pytest.approx(5.1)
    assert schedule.deadline(5.0, 31) == pytest.approx(5.41)


def test_summary_means_and_rate() -> None:
    """Guards against the accuracy benchmark comparing against a mis-computed truth."""
    records = [ServerRecord(0.0, 0.1, 0.4, 31, 0.0), ServerRecord(0.2, 0.3, 0.6, 31, 0.001)]
    summary = summarize(records)
    assert summary["mean_ttft_ms"] == pytest.approx(100.0)
    assert summary["mean_tpot_ms"] == pytest.approx(10.0)
    assert summary["request_throughput"] == pytest.approx(2 / 0.6)
    assert summarize([]) == {"requests": 0}
