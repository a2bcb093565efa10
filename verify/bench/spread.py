"""How far a cell's number could move by chance alone, from what its record already holds.

Why: ``verify compare`` called a -0.7% throughput change a regression. Whether a change is real
depends on the runs' own spread: 32 requests whose latencies vary by 20% cannot resolve a 1%
difference. Each cell records, per latency metric, vLLM's std and its request count, so each
reported statistic gets a standard error without storing the samples:

- a mean: ``std / sqrt(n)``;
- a percentile ``q`` (the median is q = 0.5): ``std x sqrt(q (1 - q) / n) / phi(z_q)``, the large-sample
  standard error of a sample quantile under a normal shape. Latency tails are heavier than normal, so
  this is a lower bound for p99: a p99 change it calls real may still be noise, never the reverse;
- a closed-loop throughput (``completed / duration``): ``c`` users keep one request each in flight, so
  the duration is the sum of the requests' E2ELs over ``c`` and the rate's relative error is E2EL's
  coefficient of variation over ``sqrt(n)``; output throughput is that rate times a fixed output length;
- a success rate ``p`` over ``n`` requests: the binomial ``sqrt(p (1 - p) / n)``.

None means the record does not hold what the formula needs (an old or hand-written file).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

from verify.bench.results import CellRecord

StandardError = Callable[[CellRecord], float | None]


def mean_se(std: float | None, n: int) -> float | None:
    if std is None or n < 1:
        return None
    return std / math.sqrt(n)


def quantile_se(std: float | None, n: int, q: float) -> float | None:
    if std is None or n < 1:
        return None
    density = NormalDist().pdf(NormalDist().inv_cdf(q))
    return std * math.sqrt(q * (1 - q) / n) / density


def throughput_se(record: CellRecord, value: float | None) -> float | None:
    mean, std = record.mean_e2el_ms, record.std_e2el_ms
    if value is None or mean is None or std is None or mean <= 0 or record.completed < 1:
        return None
    return value * (std / mean) / math.sqrt(record.completed)


def rate_se(record: CellRecord) -> float | None:
    total = record.completed + record.failed
    if record.success_rate is None or total < 1:
        return None
    p = record.success_rate
    return math.sqrt(p * (1 - p) / total)


def of_mean(metric: str) -> StandardError:
    """The standard error of ``mean_<metric>_ms``."""
    return lambda record: mean_se(getattr(record, f"std_{metric}_ms"), record.completed)


def of_quantile(metric: str, q: float) -> StandardError:
    """The standard error of the ``q`` quantile of ``<metric>`` (``median_..._ms``, ``p99_..._ms``)."""
    return lambda record: quantile_se(getattr(record, f"std_{metric}_ms"), record.completed, q)


def of_throughput(field: str) -> StandardError:
    return lambda record: throughput_se(record, getattr(record, field))
