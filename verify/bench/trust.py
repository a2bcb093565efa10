"""Whether a cell's numbers describe the server or the load generator: trust, decided per cell.

Why: a load generator short of CPU does not fail, it reports its own queue as the server's latency
(TTFT and E2EL too high, TPOT and ITL too low, req/s too low), and nothing in the HTTP numbers shows
it. Every load generator (each worker process, or the only one) watches its own event loop while it
measures (verify.bench.stall); a cell is *untrusted* when any of them was saturated, i.e. when the
latency its loop lag adds to each request reaches ``TOLERANCE_SHARE_OF_TTFT`` of the cell's mean TTFT.

How much latency a busy loop adds: every request passes through the loop several times before its
first token is timed (the send path through httpx and aiohttp, then noticing the answer), and each
pass waits about one loop iteration, which is what the probe's mean lateness measures. Against
benchmarks/scripted_server.py (the true TTFT known) the mean TTFT was too high by about
``LAG_TO_TTFT_ERROR`` times the mean lateness (docs/benchmarking.md, "Accuracy against the truth"):
0.7 ms of lag, +1.9 ms; 0.87 ms, +5.2 ms; 3.0 ms, +16 ms; on a quiet machine at 64 users 0.70-0.97 ms,
+4.7 to +6.5 ms (a ratio of 5.6-6.7, so 7 covers every run seen). So a cell is trusted while that estimate
stays under 5% of the TTFT the server itself took (the mean measured, less the estimate), the accuracy
the client is held to: measured against the inflated mean, a cell 5.4% off once passed as trusted.

A single long stall of an otherwise idle loop (the machine descheduling the client once) is not
saturation: it keeps its own warning (verify.bench.stall) and moves the cell's mean lateness only by
its share of the time.

An untrusted cell is still written (the numbers are evidence of what happened), marked in the JSONL
(``trusted: false`` with the reason), the Markdown and the chart, and an ``--slo`` gate fails on it
unless ``--allow-untrusted`` is given: a CI gate must not pass or fail on the client's numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verify.bench.caveats import trusted
from verify.bench.results import CellRecord
from verify.bench.slo import Slo, cell_label, violations, with_default_gate
from verify.bench.stall import StallSummary

# Measured ratio of the TTFT error to the probe's mean lateness (see the module docstring).
LAG_TO_TTFT_ERROR = 7.0
# The error a trusted cell may carry, as a share of the server's own TTFT (the mean less the client's part).
TOLERANCE_SHARE_OF_TTFT = 0.05


@dataclass(frozen=True, slots=True)
class Trust:
    trusted: bool
    reason: str | None = None


def combined(stalls: Sequence[StallSummary]) -> StallSummary:
    """All load generators' watches as one: the worst stall, the stalls summed, the worst mean lag."""
    if not stalls:
        return StallSummary(0.0, 0.0, 0)
    return StallSummary(
        max_ms=max(summary.max_ms for summary in stalls),
        stalled_ms=sum(summary.stalled_ms for summary in stalls),
        probes=sum(summary.probes for summary in stalls),
        mean_ms=max(summary.mean_ms for summary in stalls),
    )


def added_latency_ms(summary: StallSummary) -> float:
    """The latency a load generator with this loop lag adds to each request's TTFT (an estimate)."""
    return LAG_TO_TTFT_ERROR * summary.mean_ms


# What every untrusted reason of a CPU-bound client says, so readers can tell the cause apart.
CPU_BOUND = "CPU-bound"
# The fix, said once under the cells (never repeated per cell: on a busy machine that is every cell).
UNTRUSTED_ADVICE = "rerun with more --workers, on a machine with CPU to spare, or beside the service (--on-cloud-run)"


def _saturation(summary: StallSummary, mean_ttft_ms: float | None) -> str | None:
    if not mean_ttft_ms:
        return None  # no request succeeded: there is no latency the client could have distorted
    added = added_latency_ms(summary)
    if added >= TOLERANCE_SHARE_OF_TTFT * (mean_ttft_ms - added):
        # The estimate grows with the lag without bound; past the mean TTFT itself it only says "most of it".
        size = f"+{added:.0f} ms per request" if added < mean_ttft_ms else "most of each TTFT is the client's"
        return f"{size} (loop {summary.mean_ms:.1f} ms late on average"
    return None


def judge(stalls: Sequence[StallSummary], mean_ttft_ms: float | None) -> Trust:
    """The cell's trust from every load generator's watch (one per worker): a short reason with the cause
    and its size (the advice, ``UNTRUSTED_ADVICE``, is printed once by whoever lists the cells)."""
    found = [(index, reason) for index, summary in enumerate(stalls) if (reason := _saturation(summary, mean_ttft_ms))]
    if not found:
        return Trust(trusted=True)
    who = "client" if len(stalls) == 1 else f"{len(found)} of {len(stalls)} client workers"
    worst = found[0][1] if len(stalls) == 1 else f"{found[0][1]}, worker {found[0][0] + 1}"
    ttft = f"; mean TTFT {mean_ttft_ms:.0f} ms" if mean_ttft_ms else ""
    return Trust(trusted=False, reason=f"untrusted, {who} {CPU_BOUND}: {worst}{ttft})")


def untrusted_cells(records: Iterable[CellRecord]) -> list[CellRecord]:
    return [record for record in records if record.measured and not record.trusted]


def gate_failures(slos: Sequence[Slo], records: Sequence[CellRecord], *, allow_untrusted: bool) -> list[str]:
    """Every reason the run's gates fail, one outcome per cell: a line per cell that violates an SLO (all its
    violations on it), then one line for the untrusted cells an explicit timing ``--slo`` (latency,
    throughput) could not judge. A timing SLO is not applied to an untrusted cell (its numbers include the
    client's delay, so "violated" would be as unfounded as "met") unless ``allow_untrusted``; the success
    rate, a count of answers, is judged on every cell."""
    gates = with_default_gate(slos)
    counted = [slo for slo in gates if not slo.judges_timing]
    timed = [slo for slo in gates if slo.judges_timing]
    problems: list[str] = []
    not_judged: list[CellRecord] = []
    for record in records:
        if not record.measured:
            continue
        skip_timing = bool(timed) and not allow_untrusted and not trusted(record)
        found = violations([*counted, *([] if skip_timing else timed)], [record])
        if found:
            shown = "; ".join(violation.describe_value() for violation in found)
            also = " (its timing SLOs not judged: untrusted)" if skip_timing else ""
            # A value not recorded, or from too few samples, was not missed: the gate fails closed on it all the same.
            judged = any(violation.judged for violation in found)
            outcome = "SLO violated" if judged else "SLO not judged (the gate fails closed)"
            problems.append(f"{outcome} {cell_label(record)}: {shown}{also}")
        elif skip_timing:
            not_judged.append(record)
    if not_judged:
        named = ", ".join(record.short_label for record in not_judged)
        plural = "s" if len(not_judged) > 1 else ""
        problems.append(
            f"SLO not judged on {len(not_judged)} untrusted cell{plural} ({named}): their latencies include the "
            "client's own delay; --allow-untrusted to gate on them anyway"
        )
    return problems
