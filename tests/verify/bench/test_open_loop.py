"""Open-loop cells: the schedule (arrivals), sending on it (open_loop), goodput and confidence per cell."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import random
import statistics
import time
from pathlib import Path

import httpx
import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig
from tests.verify.bench.test_sweep import PLAN, fake, sweep
from verify.bench.arrivals import ArrivalKind, Arrivals
from verify.bench.confidence import min_samples, percentile_interval, rate_interval, share_interval
from verify.bench.console import open_loop_advice
from verify.bench.goodput import RequestBound, bounds_from, goodput
from verify.bench.open_loop import HELD_BY_CAP, SCHEDULE_BEHIND, open_loop_phase, schedule_trust
from verify.bench.results import CellRecord, load_results
from verify.bench.samples import Sample
from verify.bench.slo import parse_slo
from verify.client import aiohttp_transport
from verify.streaming import FailureKind, StreamFailure, StreamRequest, StreamResult

# --- the schedule -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ArrivalKind))
def test_every_schedule_has_exactly_the_rate_asked(kind: ArrivalKind) -> None:
    """Guards against a 200-request Poisson run that is 7% off its rate by chance: the mean rate is exact."""
    offsets = Arrivals(20.0, kind, burstiness=0.5).offsets(200)
    assert offsets[0] == 0.0
    assert offsets[-1] == pytest.approx(199 / 20.0)
    assert all(b >= a for a, b in itertools.pairwise(offsets))


def test_a_seed_repeats_its_bursts_and_burstiness_makes_them() -> None:
    """Guards against two runs (or two servers) compared under different bursts, and a burstiness that does
    nothing: the same seed gives the same schedule; a lower gamma shape spreads the gaps more."""
    assert Arrivals(10.0, seed=3).offsets(50) == Arrivals(10.0, seed=3).offsets(50)
    assert Arrivals(10.0, seed=3).offsets(50) != Arrivals(10.0, seed=4).offsets(50)

    def spread(arrivals: Arrivals) -> float:
        offsets = arrivals.offsets(2000)
        gaps = [b - a for a, b in itertools.pairwise(offsets)]
        return statistics.stdev(gaps) / statistics.fmean(gaps)

    assert spread(Arrivals(10.0, ArrivalKind.CONSTANT)) == pytest.approx(0.0, abs=1e-9)
    assert spread(Arrivals(10.0)) == pytest.approx(1.0, abs=0.1)  # Poisson: exponential gaps
    assert spread(Arrivals(10.0, ArrivalKind.GAMMA, burstiness=0.25)) == pytest.approx(2.0, abs=0.3)


def test_a_rate_or_burstiness_of_zero_is_refused_naming_the_flag() -> None:
    with pytest.raises(ValueError, match="--request-rate must be > 0"):
        Arrivals(0.0)
    with pytest.raises(ValueError, match="--burstiness must be > 0"):
        Arrivals(1.0, ArrivalKind.GAMMA, burstiness=0.0)


# --- sending on schedule ----------------------------------------------------------------------------


class VirtualClock:
    """Time that passes only when the schedule sleeps (plus, with ``real``, the real time waited for
    anything else): the schedule's own arithmetic, judged without this machine's load in it."""

    def __init__(self, *, real: bool = False) -> None:
        self.offset = 0.0
        self.real = real

    def __call__(self) -> float:
        return self.offset + (time.perf_counter() if self.real else 0.0)

    async def sleep(self, seconds: float) -> None:
        self.offset += seconds
        await asyncio.sleep(0)


def _requests(count: int) -> list[StreamRequest]:
    return [StreamRequest(model="tiny-gemma", prompt=f"p{i}", max_tokens=5) for i in range(count)]


async def test_a_server_that_keeps_up_gets_the_rate_asked_and_a_trusted_cell() -> None:
    """Guards against an open loop that sends slower than it claims (the achieved rate is measured)."""
    async with (
        FakeVllm(FakeVllmConfig()) as server,
        httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client,
    ):
        clock = VirtualClock()
        share, schedule = await open_loop_phase(
            client,
            _requests(21),
            Arrivals(100.0, ArrivalKind.CONSTANT),
            max_in_flight=16,
            clock=clock,
            sleep=clock.sleep,
        )
    assert len(share.samples) == 21
    assert all(sample.result.ok for sample in share.samples)
    assert schedule.achieved_rate == pytest.approx(100.0)
    assert schedule.capped == 0
    assert schedule.late == 0
    assert schedule_trust(schedule).trusted


async def test_a_starved_schedule_is_untrusted_and_says_the_cap_held_it() -> None:
    """Guards against a rate the server cannot serve reported as if it had been sent: with 2 in flight and
    50 ms requests, 100/s cannot be kept; the cell is untrusted and the reason names the cap."""
    async with (
        FakeVllm(FakeVllmConfig(ttft_s=0.05)) as server,
        httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client,
    ):
        _, schedule = await open_loop_phase(
            client, _requests(10), Arrivals(100.0, ArrivalKind.CONSTANT), max_in_flight=2
        )
    assert schedule.capped > 0
    assert schedule.achieved_rate is not None
    assert schedule.achieved_rate < 60.0
    trust = schedule_trust(schedule)
    assert not trust.trusted
    assert trust.reason is not None
    assert "schedule not kept" in trust.reason
    assert "in-flight cap of 2" in trust.reason


class SlowSender:
    """A clock that advances ``per_reading_s`` at every reading (the client's own cost of a send) besides the
    time slept: a client that cannot send faster than a few thousand requests a second."""

    def __init__(self, per_reading_s: float) -> None:
        self.now = 0.0
        self.per_reading_s = per_reading_s

    def __call__(self) -> float:
        self.now += self.per_reading_s
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


async def test_a_rate_far_above_what_was_sent_is_untrusted_though_no_send_was_late() -> None:
    """Red team: asked 10^9 req/s, the client sent 2 x 10^5/s and the cell was trusted, because the whole
    schedule was due within the 10 ms lateness tolerance. The achieved rate is judged against the one asked."""
    async with (
        FakeVllm(FakeVllmConfig()) as server,
        httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client,
    ):
        clock = SlowSender(per_reading_s=0.000_05)
        _, schedule = await open_loop_phase(
            client, _requests(20), Arrivals(1e9, ArrivalKind.CONSTANT), max_in_flight=32, clock=clock, sleep=clock.sleep
        )
    assert schedule.late == 0  # every send within the tolerance: lateness alone passed it
    assert schedule.achieved_rate is not None
    assert schedule.achieved_rate < 1e5
    trust = schedule_trust(schedule)
    assert not trust.trusted
    assert trust.reason is not None
    assert SCHEDULE_BEHIND in trust.reason
    assert "of the 1e+09/s asked" in trust.reason


async def test_open_loop_cells_are_written_one_per_rate_with_goodput_and_intervals(tmp_path: Path) -> None:
    """Guards against rate cells overwriting each other (one line per context x rate, read back intact) and
    against lines without the achieved rate, goodput or their intervals."""
    plan = dataclasses.replace(
        PLAN,
        contexts=(32,),
        concurrencies=(8,),
        rates=(50.0, 100.0),
        arrival=ArrivalKind.CONSTANT,
        requests=12,
        bounds=(RequestBound("ttft", 1000.0),),
    )
    output = tmp_path / "rates.jsonl"
    async with fake() as server:
        written = await sweep(server, output, plan)
    read = load_results(output).records
    assert [record.request_rate for record in read] == [50.0, 100.0]
    assert len({record.key for record in read}) == 2
    for record in written:
        assert record.max_concurrency == 8  # the in-flight cap
        assert record.achieved_request_rate is not None  # how close depends on this machine's load: see above
        assert record.arrival == "constant"
        assert record.goodput_share == 1.0
        assert record.goodput_slo == "ttft <= 1000 ms"
        assert record.confidence_level == 0.95
        assert "median_ttft_ms" in record.ci  # 12 requests: enough for a median
        assert record.too_few_samples["p99_ttft_ms"] == 368  # and never for a p99


# --- goodput ----------------------------------------------------------------------------------------


def _sample(ttft: float, e2el: float, *, ok: bool = True) -> Sample:
    failure = None if ok else StreamFailure(FailureKind.HTTP_503, "down", 503)
    result = StreamResult(
        ttft_s=ttft if ok else None,
        itl_s=(),
        e2el_s=e2el,
        output_tokens=11 if ok else None,
        prompt_tokens=10,
        finish_reason="length" if ok else None,
        text="",
        content_chunks=11 if ok else 0,
        failure=failure,
    )
    return Sample(0.0, result)


def test_goodput_judges_each_request_and_fails_the_failed() -> None:
    """Guards against goodput from a cell's p95 (it is per request) and a failed request counted as good."""
    bounds = bounds_from([parse_slo("p95_ttft_ms=200"), parse_slo("p99_ttft_ms=100"), parse_slo("p90_e2el_ms=1000")])
    assert bounds == (RequestBound("ttft", 100.0), RequestBound("e2el", 1000.0))  # the strictest per metric
    samples = [_sample(0.05, 0.5), _sample(0.15, 0.5), _sample(0.05, 1.5), _sample(0.0, 0.1, ok=False)]
    result = goodput(samples, bounds, started_at=0.0, finished_at=2.0)
    assert result is not None
    assert result.requests_met == 1
    assert result.share == 0.25
    assert result.request_rate == 0.5
    assert result.token_rate == 5.5
    assert goodput(samples, (), started_at=0.0, finished_at=2.0) is None  # no latency SLO: no goodput


# --- confidence -------------------------------------------------------------------------------------


def test_a_percentile_needs_enough_samples_for_its_interval() -> None:
    """Guards against "p99 from 20 requests": the minimum is where a 95% distribution-free interval exists."""
    assert [min_samples(p) for p in (50, 90, 95, 99)] == [6, 36, 72, 368]
    assert percentile_interval([1.0] * 367, 99) is None
    assert percentile_interval([1.0] * 368, 99) is not None


def test_percentile_intervals_hold_the_true_percentile_about_95_percent_of_the_time() -> None:
    """Guards against intervals that are too narrow to mean 95% (checked against a known distribution)."""
    draw = random.Random(7)  # noqa: S311 - test data
    true_p95 = -math.log(0.05)  # exponential(1)
    held = 0
    for _ in range(200):
        interval = percentile_interval([draw.expovariate(1.0) for _ in range(200)], 95)
        assert interval is not None
        held += interval.low <= true_p95 <= interval.high
    assert 0.9 <= held / 200 <= 1.0


def test_rate_and_share_intervals() -> None:
    """Guards against a throughput interval blind to bursts, and a share interval outside 0..1."""
    steady = rate_interval([i * 0.1 for i in range(100)], 0.0, 10.0)
    bursty = rate_interval([i * 0.02 for i in range(50)] + [9.0 + i * 0.02 for i in range(50)], 0.0, 10.0)
    assert steady is not None
    assert bursty is not None
    assert steady.high - steady.low < 0.5
    assert bursty.high - bursty.low > 5.0
    assert rate_interval([1.0, 2.0], 0.0, 10.0) is None
    share = share_interval(20, 20)
    assert share is not None
    assert share.high == 1.0
    assert 0.8 < share.low < 0.9


def _untrusted_open_cell(reason: str) -> CellRecord:
    return CellRecord.model_validate(
        {"status": "measured", "timestamp": "2026-11-26T22:00:00Z", "model": "m", "api": "chat",
         "requested_context": 64, "max_concurrency": 2, "max_tokens": 16, "num_prompts": 60, "completed": 60,
         "request_rate": 20.0, "trusted": False, "untrusted_reason": reason}
    )  # fmt: skip


def test_an_untrusted_open_loop_says_what_helps_not_more_workers() -> None:
    """Guards against advice the command then refuses: an open loop is sent from one process, so "rerun with
    more --workers" is no answer; a schedule the cap held says the server could not keep up."""
    held = _untrusted_open_cell(f"untrusted, {SCHEDULE_BEHIND}: 58 of 60 sends late; the {HELD_BY_CAP} of 2 held")
    busy = _untrusted_open_cell(f"untrusted, {SCHEDULE_BEHIND}: 30 of 60 sends late; the client's own loop")
    held_advice = open_loop_advice([held])
    assert held_advice is not None
    assert "lower --request-rate" in held_advice
    busy_advice = open_loop_advice([busy])
    assert busy_advice is not None
    assert "CPU to spare" in busy_advice
    assert "--workers" not in held_advice + busy_advice
    closed = held.model_copy(update={"request_rate": None, "untrusted_reason": "untrusted, client CPU-bound"})
    assert open_loop_advice([closed]) is None
