"""A vLLM latency histogram as a distribution: count, mean and percentiles, over all time or a window.

Why derived here and not read: vLLM exports cumulative buckets, a sum and a count per series, and no
quantile. The mean (sum / count) is exact. A percentile is reported as the upper bound of the bucket
that holds its rank ("p99 <= 250 ms"), not interpolated inside it as Prometheus's
``histogram_quantile`` does: vLLM's queue-time buckets start at 300 ms, and interpolation turned a
queue of 0.03 ms into a "p50 of 150 ms". A rank in the ``+Inf`` bucket is None ("above the last
bound", which is kept alongside).

Series of several engines (data parallel) are added bucket by bucket; with ``model`` only series with
that ``model_name`` count (when any series carries it).

Why every histogram is checked before use (``UnreadableHistogramError``): the body is the server's (or a
proxy's) text, and a malformed one crashed `verify metrics` (`le="abc"`) or reported a mean TTFT of
-10,000 ms (a negative ``_sum``). A histogram is used only when its bounds are numbers, its counts finite,
non-negative and cumulative, its ``+Inf`` bucket equals its count and its sum is finite and non-negative;
otherwise the report names it as unreadable and says why, and the rest of the report stands.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pydantic

from verify.prom import Samples

PERCENTILES = (50.0, 90.0, 99.0)
# More bucket bounds than any vLLM histogram has (its longest, ITL, has 19): beyond this the body is not vLLM's.
MAX_BUCKETS = 1000


class UnreadableHistogramError(ValueError):
    """A histogram whose numbers cannot be a histogram's; the message says which rule it broke."""


class Histogram(pydantic.BaseModel):
    """Cumulative bucket counts by upper bound (``inf`` last), with the sum and count of observations."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    buckets: tuple[tuple[float, float], ...]
    total: float
    count: float

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None

    def quantile_bound(self, q: float) -> float | None:
        """The upper bound of the bucket holding the ``q`` quantile (0..1); ``inf`` above the last finite
        bound; None without observations."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        return next((bound for bound, cumulative in self.buckets if cumulative >= rank), math.inf)

    @property
    def last_finite_bound(self) -> float | None:
        return max((bound for bound, _ in self.buckets if math.isfinite(bound)), default=None)

    def since(self, earlier: Histogram | None) -> Histogram:
        """The observations made after ``earlier`` (a server restart in between, or a difference that is not a
        histogram, e.g. a bucket or the sum went down: all of these)."""
        if earlier is None or self.count < earlier.count:
            return self
        before = dict(earlier.buckets)
        window = Histogram(
            buckets=tuple((bound, count - before.get(bound, 0.0)) for bound, count in self.buckets),
            total=self.total - earlier.total,
            count=self.count - earlier.count,
        )
        return window if problem_of(window) is None else self


def problem_of(found: Histogram) -> str | None:
    """Why ``found`` cannot be a histogram (None when it can): the rules the module docstring lists."""
    if len(found.buckets) > MAX_BUCKETS:
        return f"{len(found.buckets)} bucket bounds, more than the {MAX_BUCKETS} a histogram here may have"
    if not math.isfinite(found.count) or found.count < 0:
        return f"its count is {found.count!r}, not a finite number of 0 or more"
    if not math.isfinite(found.total) or found.total < 0:
        return f"its sum is {found.total!r}, not a finite number of 0 or more (a latency is never negative)"
    return _bucket_problem(found.buckets) or _inf_problem(found)


def _bucket_problem(buckets: tuple[tuple[float, float], ...]) -> str | None:
    previous = 0.0
    for bound, cumulative in buckets:
        if math.isnan(bound):
            return "a bucket bound is NaN"
        if not math.isfinite(cumulative) or cumulative < 0:
            return f"the bucket le={bound:g} holds {cumulative!r}, not a finite count of 0 or more"
        if cumulative < previous:
            return (
                f"the bucket le={bound:g} holds {cumulative:g}, fewer than a lower one ({previous:g}): not cumulative"
            )
        previous = cumulative
    return None


def _inf_problem(found: Histogram) -> str | None:
    if not found.buckets or not math.isinf(found.buckets[-1][0]):
        return "it has no +Inf bucket"
    if found.buckets[-1][1] != found.count:
        return f"its +Inf bucket ({found.buckets[-1][1]:g}) differs from its count ({found.count:g})"
    if found.count == 0 and found.total > 0:
        return f"its sum is {found.total:g} over no observations"
    return None


class Distribution(pydantic.BaseModel):
    """What a person reads: milliseconds, the count, and that percentiles come from buckets."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    count: int
    mean_ms: float | None
    # p50/p90/p99 -> the bucket bound it is at most; None: above the last finite bound (or no observations).
    percentiles_at_most_ms: dict[str, float | None]
    last_bound_ms: float | None


def distribution(histogram: Histogram) -> Distribution:
    def ms(value: float | None) -> float | None:
        return None if value is None or math.isinf(value) else value * 1000

    return Distribution(
        count=round(histogram.count),
        mean_ms=ms(histogram.mean),
        percentiles_at_most_ms={f"p{p:g}": ms(histogram.quantile_bound(p / 100)) for p in PERCENTILES},
        last_bound_ms=ms(histogram.last_finite_bound),
    )


def histogram(samples: Samples, name: str, *, model: str | None = None) -> Histogram | None:
    """The histogram ``name`` (without ``_bucket``/``_sum``/``_count``) summed over engines; None if absent;
    ``UnreadableHistogramError`` when its numbers cannot be a histogram's."""
    buckets = samples.get(f"{name}_bucket")
    if not buckets:
        return None

    def keep(labels: dict[str, str]) -> bool:
        return model is None or labels.get("model_name", model) == model

    if model is not None and not any(labels.get("model_name") == model for labels, _ in buckets):
        model = None  # the server labels no series with this name: take them all
    by_bound: dict[float, float] = defaultdict(float)
    for labels, value in buckets:
        if keep(labels) and "le" in labels:
            by_bound[_bound(labels["le"])] += value
        if len(by_bound) > MAX_BUCKETS:
            raise UnreadableHistogramError(f"more than {MAX_BUCKETS} bucket bounds")
    total = sum(value for labels, value in samples.get(f"{name}_sum", []) if keep(labels))
    count = sum(value for labels, value in samples.get(f"{name}_count", []) if keep(labels))
    found = Histogram(buckets=tuple(sorted(by_bound.items())), total=total, count=count)
    problem = problem_of(found)
    if problem is not None:
        raise UnreadableHistogramError(problem)
    return found


def _bound(label: str) -> float:
    try:
        bound = float(label)
    except ValueError:
        raise UnreadableHistogramError(f"a bucket bound le={label[:40]!r} is not a number") from None
    if math.isnan(bound):
        raise UnreadableHistogramError("a bucket bound is NaN")
    return bound
