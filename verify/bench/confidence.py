"""How sure a reported number is: an interval on every percentile and rate, and when a percentile is too
thin to report at all.

Percentiles: the distribution-free interval from order statistics (the count of samples below the true
p-th percentile is binomial(n, p)), so it holds whatever the latency distribution looks like, and costs
one sort instead of thousands of bootstrap resamples; it is exact and deterministic (no seed to record).
A percentile needs enough samples for that interval to exist at all: at 95%, n >= ln(0.025) / ln(p),
so p50 needs 6 requests, p90 36, p95 72 and p99 368 (``min_samples``). Below that the value is still
computed (it is `vllm bench serve`'s number) but every output shows it as too few samples, and an SLO on
it fails: "p99 from 20 requests" is the 20th-slowest-of-20 wearing a p99 label.

Rates (requests/s, goodput/s): batch means, the standard interval for a throughput measured over
time: the measured window is cut into equal slices, the rate in each is one observation, and the
interval is Student's t over them. It sees what a count alone hides (bursts, a server that slows down
mid-cell); fewer than ``MIN_BATCHES`` slices give no interval.

Shares (goodput's share of requests meeting the SLO): Wilson's score interval for a proportion.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL = 0.95
_ALPHA = 1.0 - LEVEL
_Z = 1.959963984540054  # the standard normal's 97.5% point
# Student's t 97.5% points by degrees of freedom (two-sided 95%), then the normal's.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
}  # fmt: skip
BATCHES = 10
MIN_BATCHES = 3
MIN_PER_BATCH = 5
# Above this many samples the ranks come from the normal approximation of the binomial (pooled ITL gaps
# run to tens of thousands per cell).
EXACT_UP_TO = 2000


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float

    def as_list(self) -> list[float]:
        return [self.low, self.high]


def min_samples(percentile: float) -> int:
    """Fewest samples for which a two-sided 95% distribution-free interval on the ``percentile`` exists."""
    share = percentile / 100.0
    if not 0.0 < share < 1.0:
        raise ValueError(f"a percentile is between 0 and 100 (exclusive), got {percentile}")
    return math.ceil(math.log(_ALPHA / 2) / math.log(max(share, 1.0 - share)))


def _binomial_cdfs(n: int, p: float) -> list[float]:
    """P(X <= k) for k = 0..n, X ~ binomial(n, p), in one pass in log space (n may be tens of thousands)."""
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    total = 0.0
    cdfs = []
    for i in range(n + 1):
        total += math.exp(base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
        cdfs.append(min(total, 1.0))
    return cdfs


def percentile_interval(values: Sequence[float], percentile: float) -> Interval | None:
    """The 95% distribution-free interval on the ``percentile`` of ``values``; None with too few samples."""
    n = len(values)
    if n < min_samples(percentile):
        return None
    share = percentile / 100.0
    ordered = sorted(values)
    if n > EXACT_UP_TO:
        # The binomial's normal approximation (np(1-p) >= 10 here): same ranks to within one.
        spread = _Z * math.sqrt(n * share * (1.0 - share))
        low, high = math.floor(n * share - spread), math.ceil(n * share + spread) + 1
        return Interval(ordered[max(low, 1) - 1], ordered[min(high, n) - 1])
    cdfs = _binomial_cdfs(n, share)
    # Ranks (1-based) l and u with P(X_(l) <= true percentile <= X_(u)) >= 95%: P(X <= l - 1) <= 2.5% and
    # P(X <= u - 1) >= 97.5%.
    low_rank = max((rank for rank in range(1, n + 1) if cdfs[rank - 1] <= _ALPHA / 2), default=0)
    high_rank = next((rank for rank in range(1, n + 1) if cdfs[rank - 1] >= 1.0 - _ALPHA / 2), n + 1)
    if low_rank < 1 or high_rank > n:
        return None
    return Interval(ordered[low_rank - 1], ordered[high_rank - 1])


def rate_interval(event_times: Sequence[float], start: float, end: float) -> Interval | None:
    """95% batch-means interval on events per second over [start, end]; None when too few events."""
    duration = end - start
    batches = min(BATCHES, len(event_times) // MIN_PER_BATCH)
    if duration <= 0 or batches < MIN_BATCHES:
        return None
    width = duration / batches
    counts = [0] * batches
    for moment in event_times:
        counts[min(batches - 1, max(0, int((moment - start) / width)))] += 1
    rates = [count / width for count in counts]
    mean = statistics.fmean(rates)
    half = _T975.get(batches - 1, _Z) * statistics.stdev(rates) / math.sqrt(batches)
    return Interval(max(0.0, mean - half), mean + half)


def share_interval(successes: int, total: int) -> Interval | None:
    """Wilson's 95% score interval on a proportion; None for no trials."""
    if total <= 0:
        return None
    share = successes / total
    denominator = 1.0 + _Z**2 / total
    centre = (share + _Z**2 / (2 * total)) / denominator
    half = _Z * math.sqrt(share * (1 - share) / total + _Z**2 / (4 * total**2)) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


# The percentile statistics of the results file, by the percentile each one is.
PERCENTILE_STATS: dict[str, float] = {"median": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def judgeable_percentiles(count: int) -> list[tuple[str, float]]:
    """The reported percentiles (name, percentile) that ``count`` samples can give an interval for, lowest first."""
    return [(name, share) for name, share in PERCENTILE_STATS.items() if min_samples(share) <= count]


def cell_confidence(
    values_s: dict[str, Sequence[float]], completions: Sequence[float], *, started_at: float, finished_at: float
) -> dict[str, object]:
    """The record's ``ci`` (95% intervals, in the unit of the field they belong to: ms or req/s) and
    ``too_few_samples`` (each percentile field with fewer samples than its interval needs, with that minimum).

    ``values_s`` holds each latency metric's samples in seconds (``ttft``, ``tpot``, ``itl``, ``e2el``);
    ``completions`` the instants the successful requests finished, for the request throughput's interval.
    """
    intervals: dict[str, list[float]] = {}
    too_few: dict[str, int] = {}
    for metric, values in values_s.items():
        millis = [value * 1000.0 for value in values]
        for statistic, share in PERCENTILE_STATS.items():
            field = f"{statistic}_{metric}_ms"
            interval = percentile_interval(millis, share)
            if interval is None:
                too_few[field] = min_samples(share)
            else:
                intervals[field] = interval.as_list()
    throughput = rate_interval(completions, started_at, finished_at)
    if throughput is not None:
        intervals["request_throughput"] = throughput.as_list()
    return {"confidence_level": LEVEL, "ci": intervals, "too_few_samples": too_few}
