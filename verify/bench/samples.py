"""Raw per-request samples and how a cell's metrics come from their union, however many processes sent them.

Why raw samples and never per-worker summaries: a p99 of per-worker p99s, or a mean of per-worker
means weighted wrongly, is a different (and wrong) number. Every worker sends each measured request
as it was timed (when it was sent, TTFT, every inter-token gap, E2EL, tokens, failure class); the
parent pools them and computes every metric once, exactly as for a single process. So one process
measuring N requests and four processes measuring the same N requests report identical metrics
(tests/verify/bench/test_samples.py).

Throughput is over the common measured window: from the moment the first worker began its measured
phase to the moment the last one finished. The workers' clocks are comparable because each stamps
with ``time.perf_counter``, which on Linux (and macOS) reads the system-wide monotonic clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from verify.bench.metrics import CellMetrics, cell_metrics
from verify.bench.stall import StallSummary
from verify.streaming import StreamResult


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured request: when it was sent (system monotonic seconds), how it went, and which of the
    phase's requests it answers (its index in them; None where nobody kept it), so an answer can be judged
    against its own prompt (the needle's passcode) rather than any prompt's."""

    sent_at: float
    result: StreamResult
    index: int | None = None

    def slim(self) -> Sample:
        """The sample without the generated text, which no metric reads (less to send between processes)."""
        return Sample(self.sent_at, dataclasses.replace(self.result, text=""), self.index)


@dataclass(frozen=True, slots=True)
class PhaseShare:
    """What one load generator (a worker process, or the only one) measured in one cell's measured phase."""

    started_at: float
    finished_at: float
    samples: tuple[Sample, ...]
    stalls: StallSummary
    users: int

    def samples_in_send_order(self) -> list[Sample]:
        return pooled_samples([self])


def measured_window(shares: Sequence[PhaseShare]) -> float:
    """Seconds from the first share's start to the last share's end (0 for no share)."""
    if not shares:
        return 0.0
    return max(share.finished_at for share in shares) - min(share.started_at for share in shares)


def pooled_samples(shares: Sequence[PhaseShare]) -> list[Sample]:
    """Every share's samples in the order they were sent, so the result does not depend on the split."""
    return sorted((sample for share in shares for sample in share.samples), key=lambda sample: sample.sent_at)


def union_metrics(shares: Sequence[PhaseShare]) -> CellMetrics:
    """The cell's metrics from the union of all shares' raw samples, over the common measured window."""
    return cell_metrics([sample.result for sample in pooled_samples(shares)], measured_window(shares))


def split_users(users: int, workers: int) -> list[int]:
    """``users`` spread over at most ``workers`` load generators as evenly as possible (none gets 0)."""
    if users < 1 or workers < 1:
        raise ValueError(f"users and workers must be >= 1, got {users} and {workers}")
    count = min(users, workers)
    base, extra = divmod(users, count)
    return [base + (1 if index < extra else 0) for index in range(count)]


def split_counts(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` requests split in proportion to ``weights`` (each worker's users), summing to ``total``."""
    whole = sum(weights)
    if whole <= 0:
        raise ValueError("weights must sum to more than 0")
    shares = [total * weight // whole for weight in weights]
    # Hand out what integer division left over, to the largest remainders first.
    order = sorted(range(len(weights)), key=lambda index: (-(total * weights[index] % whole), index))
    for index in order[: total - sum(shares)]:
        shares[index] += 1
    return shares
