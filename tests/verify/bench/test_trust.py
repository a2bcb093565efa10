"""Trust per cell: a saturated load generator's cell is marked, reported and never passes a gate silently."""

from __future__ import annotations

from verify.bench.results import CellRecord
from verify.bench.slo import parse_slo
from verify.bench.stall import StallSummary
from verify.bench.trust import (
    LAG_TO_TTFT_ERROR,
    added_latency_ms,
    combined,
    gate_failures,
    judge,
    untrusted_cells,
)

IDLE = StallSummary(max_ms=3.0, stalled_ms=0.0, probes=800, mean_ms=0.2)
# A loop 3 ms late on average: the measured TTFT error was +16 ms against a true 100 ms.
SATURATED = StallSummary(max_ms=71.0, stalled_ms=900.0, probes=400, mean_ms=3.0)
# One long stall of an otherwise idle loop: warned about, but not saturation.
ONE_STALL = StallSummary(max_ms=60.0, stalled_ms=60.0, probes=900, mean_ms=0.3)


def test_an_idle_load_generator_is_trusted() -> None:
    """Guards against every cell being marked untrusted (a mark nobody reads any more)."""
    assert judge([IDLE], mean_ttft_ms=100.0).trusted
    assert judge([IDLE, IDLE, IDLE], mean_ttft_ms=100.0).trusted
    assert judge([ONE_STALL], mean_ttft_ms=100.0).trusted


def test_a_saturated_load_generator_makes_the_cell_untrusted() -> None:
    """Guards against a client that was the bottleneck being reported as the server's latency."""
    trust = judge([SATURATED], mean_ttft_ms=117.0)
    assert not trust.trusted
    assert trust.reason is not None
    # cause and size on one short line; the fix is said once by whoever lists the cells
    assert trust.reason == (
        "untrusted, client CPU-bound: +21 ms per request (loop 3.0 ms late on average; mean TTFT 117 ms)"
    )


def test_one_saturated_worker_is_enough() -> None:
    """Guards against the busy worker's lag being averaged away by idle ones."""
    trust = judge([IDLE, SATURATED, IDLE, IDLE], mean_ttft_ms=117.0)
    assert not trust.trusted
    assert trust.reason is not None
    assert trust.reason.startswith("untrusted, 1 of 4 client workers CPU-bound: +21 ms per request")
    assert "worker 2" in trust.reason


def test_the_threshold_scales_with_the_latency_measured() -> None:
    """Guards against a fixed lag limit: 3 ms of lag is most of a 25 ms TTFT and nothing against 2 s."""
    assert added_latency_ms(SATURATED) == LAG_TO_TTFT_ERROR * 3.0
    assert judge([SATURATED], mean_ttft_ms=2000.0).trusted
    assert not judge([SATURATED], mean_ttft_ms=25.0).trusted


def test_a_cell_without_a_success_is_not_blamed_on_the_client() -> None:
    """Guards against "ran out of CPU" on a cell whose every request failed (e.g. 429s): no latency to distort."""
    assert judge([SATURATED], mean_ttft_ms=None).trusted


def test_combined_keeps_the_worst_of_every_worker() -> None:
    """Guards against the recorded stall figures hiding the worst worker."""
    both = combined([IDLE, SATURATED])
    assert both.max_ms == 71.0
    assert both.mean_ms == 3.0
    assert both.stalled_ms == 900.0
    assert both.probes == 1200


def _cell(*, trusted: bool, status: str = "measured") -> CellRecord:
    return CellRecord.model_validate(
        {
            "status": status,
            "timestamp": "2026-11-23T00:00:00+00:00",
            "model": "m",
            "api": "chat",
            "requested_context": 128,
            "max_concurrency": 64,
            "max_tokens": 32,
            "num_prompts": 256,
            "trusted": trusted,
            "untrusted_reason": None if trusted else "untrusted: the load generator ran out of CPU",
        }
    )


def _measured(*, trusted: bool, p99_ttft_ms: float, context: int = 128) -> CellRecord:
    update = {"completed": 400, "failed": 0, "success_rate": 1.0, "p99_ttft_ms": p99_ttft_ms}
    return _cell(trusted=trusted).model_copy(update={**update, "requested_context": context})


def test_an_slo_gate_fails_on_an_untrusted_cell_unless_allowed() -> None:
    """Guards against CI passing (or failing) a deploy on numbers the client made up."""
    records = [_measured(trusted=True, p99_ttft_ms=50.0), _measured(trusted=False, p99_ttft_ms=50.0, context=256)]
    (line,) = gate_failures([parse_slo("p99_ttft_ms=2000")], records, allow_untrusted=False)
    assert line == (
        "SLO not judged on 1 untrusted cell (256 x 64 users): their latencies include the client's own delay; "
        "--allow-untrusted to gate on them anyway"
    )
    assert gate_failures([parse_slo("p99_ttft_ms=2000")], records, allow_untrusted=True) == []


def test_each_cell_gets_one_slo_outcome() -> None:
    """Guards against a cell listed as both "violated" and "not judged", and against a line per SLO per
    cell: a cell that fails the success rate while untrusted is one "violated" line saying its timing SLOs
    were not judged; the other untrusted cells share one "not judged" line."""
    failing = _measured(trusted=False, p99_ttft_ms=5000.0).model_copy(
        update={"completed": 400, "failed": 112, "success_rate": 400 / 512, "errors": {"http_503": 112}}
    )
    records = [failing, _measured(trusted=False, p99_ttft_ms=5000.0, context=256)]
    lines = gate_failures([parse_slo("p99_ttft_ms=2000")], records, allow_untrusted=False)
    violated = (
        "SLO violated context 128 x concurrency 64: success_rate = 0.781 (SLO >= 1) (its timing SLOs not judged: "
        "untrusted)"
    )
    not_judged = (
        "SLO not judged on 1 untrusted cell (256 x 64 users): their latencies include the client's own delay; "
        "--allow-untrusted to gate on them anyway"
    )
    assert lines == [violated, not_judged]
    (allowed,) = gate_failures([parse_slo("p99_ttft_ms=2000")], records[:1], allow_untrusted=True)
    assert allowed == (
        "SLO violated context 128 x concurrency 64: success_rate = 0.781 (SLO >= 1); p99_ttft_ms = 5,000 (SLO <= 2000)"
    )


def test_only_timing_slos_are_stopped_by_an_untrusted_cell() -> None:
    """Guards against a rollout gate failing on a saturated client when it only counts failed requests:
    the success rate is a count the client reports truthfully; latencies and throughputs are not."""
    records = [_cell(trusted=False)]
    records[0] = records[0].model_copy(update={"completed": 256, "failed": 0, "success_rate": 1.0, "p99_ttft_ms": 50.0})
    assert gate_failures([parse_slo("success_rate=0.99")], records, allow_untrusted=False) == []
    (line,) = gate_failures(
        [parse_slo("success_rate=0.99"), parse_slo("p99_ttft_ms=2000")], records, allow_untrusted=False
    )
    assert line.startswith("SLO not judged on 1 untrusted cell (128 x 64 users)")


def test_skipped_cells_are_not_judged() -> None:
    """Guards against a skipped cell (no numbers at all) counting as untrusted."""
    assert untrusted_cells([_cell(trusted=False, status="skipped")]) == []


def test_the_threshold_is_the_servers_ttft_not_the_inflated_mean() -> None:
    """Guards against a cell 5.4% off being reported as trusted: benchmarks/accuracy.py at 64 users measured
    105.9 ms against a true 100.6 ms with 0.836 ms of lag; 105.3 ms with 0.703 ms of lag was 4.7% off."""
    off_by_5_4 = StallSummary(max_ms=23.2, stalled_ms=0.0, probes=400, mean_ms=0.836)
    off_by_4_7 = StallSummary(max_ms=21.9, stalled_ms=0.0, probes=400, mean_ms=0.703)
    assert not judge([off_by_5_4], mean_ttft_ms=105.9).trusted
    assert judge([off_by_4_7], mean_ttft_ms=105.3).trusted
