"""``--slo key=value`` gates: the exit code CI reads after a deploy.

Why keys are result-file keys: an SLO is then checked against exactly the number that is printed and
stored (``p99_ttft_ms``, ``success_rate``, ``request_throughput``...). Latencies (``*_ms``) are upper
bounds; rates and throughputs are lower bounds. ``ttft_p99_ms``-style spellings are accepted too.

Why a default gate: a bench run right after a rollout whose requests failed is a failed rollout, with
or without an ``--slo``. Unless the user states their own ``success_rate``, every measured cell must
have ``success_rate >= 1`` (every request succeeded); ``--slo success_rate=0`` turns that off and
``--slo success_rate=0.95`` tolerates some failures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from verify.bench.caveats import too_few_samples
from verify.bench.confidence import PERCENTILE_STATS, judgeable_percentiles, min_samples
from verify.bench.results import CellRecord
from verify.numbers import readable

_LOWER_BOUNDS = ("success_rate", "request_throughput", "output_throughput", "total_token_throughput")
_METRIC_ORDER = re.compile(r"^(ttft|tpot|itl|e2el)_(mean|median|p\d+)_ms$")


def _latency_keys() -> list[str]:
    return [name for name in CellRecord.model_fields if name.endswith("_ms") and not name.startswith("std_")]


def allowed_keys() -> list[str]:
    return [*_LOWER_BOUNDS, *_latency_keys()]


@dataclass(frozen=True, slots=True)
class Slo:
    key: str
    limit: float

    @property
    def is_lower_bound(self) -> bool:
        return self.key in _LOWER_BOUNDS

    @property
    def judges_timing(self) -> bool:
        """Latencies and throughputs are timed by the client, so a saturated client moves them; the success
        rate is a count of answers, which an untrusted (saturated) cell still reports truthfully."""
        return self.key != "success_rate"

    def describe(self) -> str:
        return f"{self.key} {'>=' if self.is_lower_bound else '<='} {self.limit:g}"

    def holds(self, value: float) -> bool:
        return value >= self.limit if self.is_lower_bound else value <= self.limit

    @property
    def samples_needed(self) -> int | None:
        """The fewest measured requests a cell needs for this SLO to be judged: a percentile's 95% interval
        exists only from ``min_samples`` on (verify.bench.confidence), so a p99 SLO on 20 requests would judge
        the slowest of 20 under a p99 label. None for a mean, a rate or the pooled ITL gaps."""
        statistic, _, metric = self.key.partition("_")
        # The pooled inter-token gaps are many per request, so a request count says nothing about them.
        if statistic not in PERCENTILE_STATS or metric.startswith("itl"):
            return None
        return min_samples(PERCENTILE_STATS[statistic])


def parse_slo(text: str) -> Slo:
    """``p99_ttft_ms=2000`` (or ``ttft_p99_ms=2000``); raises ValueError naming the allowed keys."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep:
        raise ValueError(f"--slo takes key=value, e.g. p99_ttft_ms=2000 or success_rate=0.99, got {text!r}")
    reordered = _METRIC_ORDER.match(key)
    if reordered:
        key = f"{reordered.group(2)}_{reordered.group(1)}_ms"
    if key not in allowed_keys():
        raise ValueError(f"--slo key {key!r} is not one of: {', '.join(allowed_keys())}")
    try:
        limit = float(raw)
    except ValueError:
        raise ValueError(f"--slo {key} needs a number after '=', got {raw!r}") from None
    return Slo(key, limit)


DEFAULT_SUCCESS_RATE = 1.0


def with_default_gate(slos: Iterable[Slo]) -> list[Slo]:
    """The user's SLOs, plus ``success_rate >= DEFAULT_SUCCESS_RATE`` unless they gave a success_rate."""
    given = list(slos)
    if any(slo.key == "success_rate" for slo in given):
        return given
    return [Slo("success_rate", DEFAULT_SUCCESS_RATE), *given]


def requests_needed(slos: Iterable[Slo]) -> int:
    """The fewest measured requests per cell that every percentile SLO of ``slos`` can be judged on (0: any)."""
    return max((slo.samples_needed or 0 for slo in slos), default=0)


def thin_gates(slos: Iterable[Slo], requests_per_cell: int, *, flag: str) -> str | None:
    """Why the run cannot judge its SLOs, before a request is sent: a percentile SLO needs more measured
    requests per cell than the run sends (``flag`` names the knob); None when every SLO can be judged."""
    thin = [(slo, needed) for slo in slos if (needed := slo.samples_needed) and requests_per_cell < needed]
    if not thin:
        return None
    slo, needed = max(thin, key=lambda pair: pair[1])
    statistic, _, metric = slo.key.partition("_")
    lower = [
        f"{name}_{metric} ({min_samples(share)})"
        for name, share in judgeable_percentiles(requests_per_cell)
        if name != "median"
    ]
    instead = f", or gate on a percentile {requests_per_cell} requests can judge: {', '.join(lower)}" if lower else ""
    return (
        f"--slo {slo.key} cannot be judged from {requests_per_cell} measured requests per cell: a {statistic} needs "
        f"at least {needed} (the fewest for which its 95% interval exists). Raise {flag} to {needed}{instead}"
    )


@dataclass(frozen=True, slots=True)
class Violation:
    """A cell the SLO cannot pass on: its value misses the bound, no request succeeded, or (``judged`` False) the
    cell cannot be judged on it at all: the field is not recorded (a file written without it) or the percentile
    came from fewer samples than it needs. A gate fails closed on every kind; a reader is told which."""

    slo: Slo
    cell: str
    value: float | None
    # The samples the SLO's percentile needed and the cell lacked (its requests that completed): not judged.
    thin: tuple[int, int] | None = None
    # False: the cell's record holds no value for the SLO's field although requests succeeded.
    recorded: bool = True

    @property
    def judged(self) -> bool:
        """Whether the cell's value was held against the SLO (False: not recorded, or too few samples)."""
        return self.thin is None and self.recorded

    def describe(self) -> str:
        return f"{self.cell}: {self.describe_value()}"

    def not_judged(self) -> str:
        """Why the SLO could not be judged on the cell, in a few words: ``p95_ttft_ms not recorded``,
        ``p99_ttft_ms: too few samples (20 completed, a p99 needs 368)``."""
        if not self.recorded:
            return f"{self.slo.key} not recorded"
        completed, needed = self.thin or (0, 0)
        statistic = self.slo.key.partition("_")[0]
        return f"{self.slo.key}: too few samples ({completed} completed, a {statistic} needs {needed})"

    def describe_value(self) -> str:
        """``p99_ttft_ms = 2,345 (SLO <= 2000)``, the cell left out."""
        shown = "no value (no request succeeded)" if self.value is None else readable(self.value)
        bound = ">=" if self.slo.is_lower_bound else "<="
        if not self.recorded:
            return f"{self.slo.key} not recorded in this cell, so not judged (SLO {bound} {self.slo.limit:g})"
        if self.thin is not None:
            completed, needed = self.thin
            return (
                f"{self.slo.key} = {shown} from {completed} requests, too few to judge (a "
                f"{self.slo.key.partition('_')[0]} needs >= {needed}; SLO {bound} {self.slo.limit:g})"
            )
        return f"{self.slo.key} = {shown} (SLO {bound} {self.slo.limit:g})"


def cell_label(record: CellRecord) -> str:
    """``context 128 x concurrency 8`` (closed loop) or ``context 128 x 20 req/s`` (open loop)."""
    if record.request_rate is not None:
        return f"context {record.requested_context} x {record.load}"
    return f"context {record.requested_context} x concurrency {record.max_concurrency}"


def violations(slos: Iterable[Slo], records: Iterable[CellRecord]) -> list[Violation]:
    """Every measured cell must meet every SLO; skipped cells are not judged. A percentile from fewer
    completed requests than it needs (failures thinned the cell) fails closed: its value is no p99."""
    found: list[Violation] = []
    measured = [record for record in records if record.measured]
    for slo in slos:
        for record in measured:
            value = getattr(record, slo.key)
            # A latency with no successful request is not "0 ms": it failed the SLO.
            no_sample = record.completed == 0 and not slo.is_lower_bound
            needed = None if no_sample or value is None else too_few_samples(record, slo.key)
            if needed is not None:
                found.append(Violation(slo, cell_label(record), value, thin=(record.completed, needed)))
            elif value is None and not no_sample:
                found.append(Violation(slo, cell_label(record), None, recorded=False))
            elif value is None or no_sample or not slo.holds(float(value)):
                found.append(Violation(slo, cell_label(record), None if no_sample else value))
    return found
