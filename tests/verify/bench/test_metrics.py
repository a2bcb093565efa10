"""Cell metrics: vLLM's definitions on known inputs, then on a local server with injected delays."""

from __future__ import annotations

import httpx
import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig
from verify.bench.metrics import cell_metrics, percentile
from verify.bench.sweep import closed_loop
from verify.client import aiohttp_transport
from verify.streaming import Api, FailureKind, StreamFailure, StreamRequest, StreamResult


def ok(ttft: float, itl: tuple[float, ...], e2el: float, out: int, prompt: int = 100) -> StreamResult:
    return StreamResult(ttft, itl, e2el, out, prompt, "length", "x", len(itl) + 1)


def failed(kind: FailureKind, status: int | None = None) -> StreamResult:
    return StreamResult(None, (), 0.5, None, None, None, "", 0, StreamFailure(kind, "boom", status))


def test_percentile_interpolates_like_numpy() -> None:
    """Guards against p99 of a small cell being the max (nearest-rank), unlike `vllm bench serve`."""
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile([5.0], 99) == 5.0
    assert percentile([], 99) == 0.0


def test_cell_metrics_use_vllms_definitions() -> None:
    """Guards against TPOT from chunk counts, throughput over summed latencies, and failures counted in
    latency statistics."""
    results = [
        ok(0.1, (0.02, 0.02, 0.02), 0.16, out=4),  # TPOT (0.16-0.1)/3 = 20 ms
        ok(0.3, (0.05,), 0.4, out=11),  # 11 tokens in 2 chunks: TPOT (0.4-0.3)/10 = 10 ms
        ok(0.2, (), 0.2, out=1),  # one token: no TPOT
        failed(FailureKind.HTTP_429, 429),
    ]
    metrics = cell_metrics(results, duration_s=2.0)
    assert (metrics.completed, metrics.failed) == (3, 1)
    assert metrics.success_rate == 0.75
    assert metrics.request_throughput == 1.5
    assert metrics.total_output_tokens == 16
    assert metrics.output_throughput == 8.0
    assert metrics.total_input_tokens == 300
    assert metrics.total_token_throughput == 158.0
    assert metrics.ttft.mean == pytest.approx(200.0)
    assert metrics.ttft.median == pytest.approx(200.0)
    assert metrics.tpot.mean == pytest.approx(15.0)
    assert metrics.tpot.samples == 2
    assert metrics.itl.samples == 4
    assert metrics.itl.mean == pytest.approx(27.5)
    assert metrics.e2el.mean == pytest.approx(253.333, rel=1e-4)
    assert metrics.errors == {"http_429": 1}
    assert metrics.error_statuses == {"429": 1}
    assert metrics.mean_prompt_tokens == 100.0
    fields = metrics.as_fields()
    for key in ("mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "p90_e2el_ms", "std_ttft_ms", "request_throughput"):
        assert key in fields


def test_cell_with_no_success_reports_zeros_not_errors() -> None:
    """Guards against a crash (or NaN in the results file) when every request of a cell failed."""
    metrics = cell_metrics([failed(FailureKind.READ_TIMEOUT)], duration_s=1.0)
    assert metrics.completed == 0
    assert metrics.success_rate == 0.0
    assert metrics.ttft.mean == 0.0
    assert metrics.mean_prompt_tokens is None


async def test_metrics_match_injected_server_delays() -> None:
    """Guards against a measurement that drifts from what the server really did: 6 requests at 2 users,
    TTFT 120 ms, chunks 30 ms apart, 4 pieces of 2 tokens each."""
    config = FakeVllmConfig(pieces=("a", "b", "c", "d"), tokens_per_piece=2, ttft_s=0.12, itl_s=0.03)
    request = StreamRequest(model="tiny-gemma", prompt="p", max_tokens=8, api=Api.CHAT)
    async with FakeVllm(config) as server, httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as c:
        results, duration = await closed_loop(c, [request] * 6, concurrency=2)
    metrics = cell_metrics(results, duration)
    assert metrics.completed == 6
    # Lower bounds are exact (the server sleeps at least this long). Upper bounds allow the event-loop
    # delays of a loaded 2-core machine (seen: +80 ms TTFT while a benchmark ran beside the suite); a
    # measurement that counted chunks or stopped on the role chunk would still fall far outside them.
    assert 120.0 <= metrics.ttft.mean < 120.0 + 100.0
    assert 30.0 <= metrics.itl.median < 30.0 + 30.0
    e2el = 120.0 + 3 * 30.0
    assert e2el <= metrics.e2el.mean < e2el + 150.0
    # TPOT = (E2EL - TTFT) / (8 - 1): 3 gaps of 30 ms spread over 7 tokens.
    assert metrics.tpot.mean == pytest.approx(90.0 / 7, abs=8.0)
    # Closed loop: 3 rounds of ~210 ms each at 2 users.
    assert 3 * e2el / 1000.0 <= duration < 3 * e2el / 1000.0 + 0.6
    assert metrics.request_throughput == pytest.approx(6 / duration)
    assert metrics.total_output_tokens == 48
