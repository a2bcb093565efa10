"""Goodput: the requests (and their tokens) per second that met the SLO, each request judged on its own.

Why per request: "p95 TTFT under 2 s" says nothing about how many users waited longer; capacity is
what is served within the SLO, as `vllm bench serve --goodput`, inference-perf and AIPerf report it.
The per-request bounds come from the run's latency ``--slo`` gates: ``p95_ttft_ms=2000`` means each
request's TTFT must be at most 2000 ms (whatever statistic the gate names, the bound is its value);
TTFT, TPOT and E2EL are judged per request (ITL is a per-gap figure, and stays a cell-level gate).
A failed request never meets the SLO. Without a latency ``--slo`` there is no goodput (it is not 100%).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verify.bench.confidence import rate_interval, share_interval
from verify.bench.samples import Sample
from verify.bench.slo import Slo

# The metrics a single request has one value of, and how to read it (seconds) from its result.
PER_REQUEST = ("ttft", "tpot", "e2el")


@dataclass(frozen=True, slots=True)
class RequestBound:
    """One per-request bound, in ms: ``ttft <= 2000``."""

    metric: str
    limit_ms: float

    def describe(self) -> str:
        return f"{self.metric} <= {self.limit_ms:g} ms"


def bounds_from(slos: Iterable[Slo]) -> tuple[RequestBound, ...]:
    """The per-request bounds the latency gates imply: the strictest per metric."""
    strictest: dict[str, float] = {}
    for slo in slos:
        parts = slo.key.split("_")
        if len(parts) == 3 and parts[1] in PER_REQUEST and parts[2] == "ms":
            strictest[parts[1]] = min(slo.limit, strictest.get(parts[1], slo.limit))
    return tuple(RequestBound(metric, strictest[metric]) for metric in PER_REQUEST if metric in strictest)


def meets(sample: Sample, bounds: Sequence[RequestBound]) -> bool:
    result = sample.result
    if not result.ok:
        return False
    values = {"ttft": result.ttft_s, "tpot": result.tpot_s, "e2el": result.e2el_s}
    for bound in bounds:
        value = values[bound.metric]
        # A one-token answer has no TPOT: nothing to violate.
        if value is not None and value * 1000.0 > bound.limit_ms:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Goodput:
    slo: str
    requests_met: int
    share: float
    request_rate: float
    token_rate: float
    share_ci: list[float] | None
    request_rate_ci: list[float] | None

    def as_fields(self) -> dict[str, object]:
        return {
            "goodput_slo": self.slo,
            "goodput_requests": self.requests_met,
            "goodput_share": self.share,
            "goodput_request_rate": self.request_rate,
            "goodput_token_rate": self.token_rate,
            "goodput_share_ci": self.share_ci,
            "goodput_request_rate_ci": self.request_rate_ci,
        }


def goodput(
    samples: Sequence[Sample], bounds: Sequence[RequestBound], *, started_at: float, finished_at: float
) -> Goodput | None:
    """The cell's goodput over its measured window; None without bounds or samples."""
    if not bounds or not samples:
        return None
    duration = finished_at - started_at
    met = [sample for sample in samples if meets(sample, bounds)]
    per_second = 1.0 / duration if duration > 0 else 0.0
    done_at = [sample.sent_at + sample.result.e2el_s for sample in met]
    rate_ci = rate_interval(done_at, started_at, finished_at)
    share_ci = share_interval(len(met), len(samples))
    return Goodput(
        slo=", ".join(bound.describe() for bound in bounds),
        requests_met=len(met),
        share=len(met) / len(samples),
        request_rate=len(met) * per_second,
        token_rate=sum(sample.result.output_tokens or 0 for sample in met) * per_second,
        share_ci=None if share_ci is None else share_ci.as_list(),
        request_rate_ci=None if rate_ci is None else rate_ci.as_list(),
    )
