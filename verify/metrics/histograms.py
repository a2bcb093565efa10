"""A vLLM latency histogram as a distribution: count, mean and percentiles, over all time or a window.

Why derived here and not read: vLLM exports cumulative buckets, a sum and a count per series, and no
quantile. The mean (sum / count) is exact. A percentile is reported as the upper bound of the bucket
that holds its rank ("p99 <= 250 ms"), not interpolated inside it as Prometheus's
``histogram_quantile`` does: vLLM's queue-time buckets start at 300 ms, and interpolation turned a
queue of 0.03 ms into a "p50 of 150 ms". A rank in the ``+Inf`` bucket is None ("above the last
bound", which is kept alongside).

Series of several engines (data parallel) are added bucket by bucket; with ``model`` only series with
that ``model_name`` count (when any series carries it).
"""

from __future__ import annotations

import math
from collections import defaultdict

import pydantic

from verify.prom import Samples

PERCENTILES = (50.0, 90.0, 99.0)


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
        """The observations made after ``earlier`` (a server restart in between: all of these)."""
        if earlier is None or self.count < earlier.count:
            return self
        before = dict(earlier.buckets)
        return Histogram(
            buckets=tuple((bound, count - before.get(bound, 0.0)) for bound, count in self.buckets),
            total=self.total - earlier.total,
            count=self.count - earlier.count,
        )


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
    """The histogram ``name`` (without ``_bucket``/``_sum``/``_count``) summed over engines; None if absent."""
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
            by_bound[float(labels["le"])] += value
    total = sum(value for labels, value in samples.get(f"{name}_sum", []) if keep(labels))
    count = sum(value for labels, value in samples.get(f"{name}_count", []) if keep(labels))
    return Histogram(buckets=tuple(sorted(by_bound.items())), total=total, count=count)
