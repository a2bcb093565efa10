"""Cell metrics with `vllm bench serve`'s names and definitions, computed from measured requests.

Why copy vLLM's definitions exactly: the issue's acceptance test is agreement with `vllm bench serve`
on the same workload, and users compare our numbers with published vLLM ones. So:

- TTFT, E2EL per successful request; TPOT = (E2EL - TTFT) / (output tokens - 1) for requests with
  more than one output token; ITL pooled over all successful requests' inter-chunk gaps.
- mean / median / std (population) / percentiles with linear interpolation (numpy's default), in ms.
- throughputs divide by the wall time of the measured phase: request_throughput = completed / duration,
  output_throughput = output tokens / duration, total_token_throughput adds the prompt tokens.
- tokens come from the server's ``usage`` (prompt tokens as the server counted them, chat template
  included), never from chunk counts.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from verify.streaming import StreamResult

PERCENTILES: tuple[int, ...] = (90, 95, 99)
METRIC_NAMES: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
# How many failure messages a cell keeps, so a JSON line stays readable.
MAX_FAILURE_EXAMPLES = 3


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Distribution:
    """One latency metric over a cell, in milliseconds; all zero when there is no sample (as vLLM)."""

    mean: float
    median: float
    std: float
    percentiles: dict[int, float]
    samples: int

    @classmethod
    def of_seconds(cls, values: Sequence[float]) -> Distribution:
        if not values:
            return cls(0.0, 0.0, 0.0, dict.fromkeys(PERCENTILES, 0.0), 0)
        millis = [value * 1000.0 for value in values]
        return cls(
            mean=statistics.fmean(millis),
            median=statistics.median(millis),
            std=statistics.pstdev(millis),
            percentiles={p: percentile(millis, p) for p in PERCENTILES},
            samples=len(millis),
        )

    def as_fields(self, name: str) -> dict[str, float]:
        """``mean_<name>_ms``, ``median_<name>_ms``, ``std_<name>_ms``, ``p99_<name>_ms``... as vLLM names them."""
        fields = {
            f"mean_{name}_ms": self.mean,
            f"median_{name}_ms": self.median,
            f"std_{name}_ms": self.std,
        }
        fields.update({f"p{p}_{name}_ms": value for p, value in self.percentiles.items()})
        return fields


@dataclass(frozen=True, slots=True)
class CellMetrics:
    duration: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2el: Distribution
    errors: dict[str, int]
    error_statuses: dict[str, int]
    error_examples: tuple[str, ...]
    mean_prompt_tokens: float | None

    @property
    def success_rate(self) -> float:
        total = self.completed + self.failed
        return self.completed / total if total else 0.0

    def as_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {
            "duration": self.duration,
            "completed": self.completed,
            "failed": self.failed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput": self.request_throughput,
            "output_throughput": self.output_throughput,
            "total_token_throughput": self.total_token_throughput,
            "success_rate": self.success_rate,
            "errors": self.errors,
            "error_statuses": self.error_statuses,
            "error_examples": list(self.error_examples),
            "actual_context": self.mean_prompt_tokens,
        }
        for name in METRIC_NAMES:
            fields.update(getattr(self, name).as_fields(name))
        return fields


def cell_metrics(results: Sequence[StreamResult], duration_s: float) -> CellMetrics:
    """Summarise one cell's measured requests (warm-up excluded) over ``duration_s`` of wall time."""
    succeeded = [result for result in results if result.ok]
    failures = [result.failure for result in results if result.failure is not None]
    prompt_tokens = [r.prompt_tokens for r in succeeded if r.prompt_tokens is not None]
    output_tokens = sum(r.output_tokens or 0 for r in succeeded)
    input_tokens = sum(prompt_tokens)
    tpots = [tpot for tpot in (r.tpot_s for r in succeeded) if tpot is not None]
    per_second = 1.0 / duration_s if duration_s > 0 else 0.0
    examples: list[str] = []
    for failure in failures:
        text = f"{failure.kind.value}" + (f" {failure.status}" if failure.status else "") + f": {failure.detail}"
        if text not in examples:
            examples.append(text)
    return CellMetrics(
        duration=duration_s,
        completed=len(succeeded),
        failed=len(failures),
        total_input_tokens=input_tokens,
        total_output_tokens=output_tokens,
        request_throughput=len(succeeded) * per_second,
        output_throughput=output_tokens * per_second,
        total_token_throughput=(input_tokens + output_tokens) * per_second,
        ttft=Distribution.of_seconds([r.ttft_s for r in succeeded if r.ttft_s is not None]),
        tpot=Distribution.of_seconds(tpots),
        itl=Distribution.of_seconds([gap for r in succeeded for gap in r.itl_s]),
        e2el=Distribution.of_seconds([r.e2el_s for r in succeeded]),
        errors=dict(Counter(f.kind.value for f in failures)),
        error_statuses=dict(Counter(str(f.status) for f in failures if f.status is not None)),
        error_examples=tuple(examples[:MAX_FAILURE_EXAMPLES]),
        mean_prompt_tokens=statistics.fmean(prompt_tokens) if prompt_tokens else None,
    )
