"""`compare` over N results files: stacks side by side per workload, with cost and a verdict.

What the hand-made deployments ended with: runs across hardware and model sizes in one table, the cost of
each, and which stack to pick. Here each results file is one *run* of one stack (its accelerator,
platform, model and price per hour, as `verify bench` recorded them from the stack's own billing shape,
serving/pricing.py). Cells are grouped by *workload* (API, prompt tokens, output tokens) and, inside it,
by run and concurrency.

Per workload and run, the *chosen* cell is the measured, trusted cell that meets every SLO with the
lowest cost per 1M output tokens (no SLO: the default gate, every request succeeded). Untrusted cells (a
saturated load generator, see verify/bench/trust.py) and skipped cells are shown, marked, and never
chosen. The *cheapest* run of a workload is the one whose chosen cell costs least per 1M output tokens.

Prices: each run's from the project's price table (verify/bench/run_pricing.py): a recorded price below
the least the table says the run's accelerator costs is a contradiction, shown beside the table's price,
and that run is never chosen as the cheapest; costs per 1M are recomputed from the price used.

Monthly cost, at list prices and 730 hours a month (Google's convention):
- always on: one billed unit (a Cloud Run instance kept by minInstances, or the TPU node) 730 h;
- scaled to zero (Cloud Run only: a TPU node bills while it exists): the same unit only while active,
  ``active_hours`` a day.
Break-even active hours per day: below it, serving a workload's traffic with this run's stack scaled to
zero costs less than the cheapest way to serve it always on, per unit of measured throughput:
``24 x min over runs (price / throughput) / (this run's price / throughput)``. 24 or more: cheaper at any
activity. Throughputs are those of each run's chosen cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verify.bench.caveats import trusted, untrusted_reason
from verify.bench.results import CellRecord
from verify.bench.run_pricing import scales_to_zero
from verify.bench.slo import Slo, violations, with_default_gate
from verify.numbers import readable

HOURS_PER_MONTH = 730.0
DEFAULT_ACTIVE_HOURS = 8.0


@dataclass(frozen=True, slots=True)
class Run:
    """One results file: one stack measured once."""

    label: str  # the file's stem
    path: Path
    records: tuple[CellRecord, ...]
    # What the file recorded, when the price used (in the records) is the table's instead.
    recorded_price_per_hour_usd: float | None = None
    # Why the run's price (or platform) contradicts the price table: the run is shown, never chosen.
    price_problem: str | None = None
    # Where the price used comes from, in words (the table, the recorded price checked against it, unchecked).
    price_note: str | None = None

    def _first(self, name: str) -> str | None:
        return next((str(getattr(r, name)) for r in self.records if getattr(r, name) is not None), None)

    @property
    def accelerator(self) -> str:
        return self._first("accelerator") or "unknown accelerator"

    @property
    def platform(self) -> str | None:
        return self._first("platform")

    @property
    def model(self) -> str:
        return self._first("model") or "unknown model"

    @property
    def price_per_hour_usd(self) -> float | None:
        return next((r.price_per_hour_usd for r in self.records if r.price_per_hour_usd is not None), None)

    @property
    def price_basis(self) -> str | None:
        return self._first("price_basis")

    @property
    def scales_to_zero(self) -> bool:
        """Cloud Run bills a GPU instance only while it runs; a TPU node bills while it exists."""
        return scales_to_zero(self._first("accelerator"), self.platform)

    def always_on_monthly_usd(self) -> float | None:
        price = self.price_per_hour_usd
        return None if price is None else price * HOURS_PER_MONTH

    def scaled_to_zero_monthly_usd(self, active_hours: float) -> float | None:
        price = self.price_per_hour_usd
        if price is None:
            return None
        return price * HOURS_PER_MONTH * (active_hours / 24 if self.scales_to_zero else 1.0)


@dataclass(frozen=True, slots=True)
class Workload:
    api: str
    context: int
    max_tokens: int

    def describe(self) -> str:
        return f"{self.api}, {self.context:,} prompt tokens -> {self.max_tokens:,} output tokens"


@dataclass(frozen=True, slots=True)
class Cell:
    run: Run
    record: CellRecord
    # The SLOs the cell's values miss, and those it cannot be judged on (a field the file does not record, a
    # percentile from too few samples): either keeps it from being chosen, each said as what it is.
    failed_slos: tuple[str, ...]
    allow_untrusted: bool = False
    not_judged: tuple[str, ...] = ()

    @classmethod
    def judged(cls, run: Run, record: CellRecord, gates: Sequence[Slo], *, allow_untrusted: bool = False) -> Cell:
        found = violations(gates, [record])
        missed = tuple(v.slo.describe() for v in found if v.judged)
        unjudged = tuple(v.not_judged() for v in found if not v.judged)
        return cls(run, record, missed, allow_untrusted, unjudged)

    @property
    def eligible(self) -> bool:
        """May be chosen: measured, trusted (or untrusted cells allowed), judged on and meeting every SLO, priced."""
        return (
            self.record.measured
            and (trusted(self.record) or self.allow_untrusted)
            and not self.failed_slos
            and not self.not_judged
            and self.record.cost_per_1m_output_tokens_usd is not None
            and self.run.price_problem is None
        )

    @property
    def mark(self) -> str:
        if not self.record.measured:
            return f"skipped: {self.record.skip_reason or 'no reason recorded'}"
        if not trusted(self.record) and not self.allow_untrusted:
            return f"untrusted: {untrusted_reason(self.record)}"
        if self.failed_slos or self.not_judged:
            missed = ["misses " + "; ".join(self.failed_slos)] if self.failed_slos else []
            unjudged = ["not judged: " + "; ".join(self.not_judged)] if self.not_judged else []
            return "; ".join(missed + unjudged)
        if self.record.cost_per_1m_output_tokens_usd is None:
            return "no price"
        if self.run.price_problem is not None:
            return f"not chosen: {self.run.price_problem}"
        return ""


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """One run's answer for one workload."""

    run: Run
    cells: tuple[Cell, ...]
    chosen: Cell | None
    break_even_hours: float | None = None


@dataclass(frozen=True, slots=True)
class WorkloadVerdict:
    workload: Workload
    runs: tuple[RunVerdict, ...]
    cheapest: RunVerdict | None
    reason: str  # why that one, or why none


def workload_of(record: CellRecord) -> Workload:
    return Workload(record.api, record.requested_context, record.max_tokens)


def judge(runs: Sequence[Run], slos: Sequence[Slo], *, allow_untrusted: bool = False) -> list[WorkloadVerdict]:
    """Every workload any run measured, each run's cells, chosen cell and break-even, and the cheapest run;
    ``allow_untrusted`` (``compare --allow-untrusted``) lets untrusted cells be chosen too."""
    gates = with_default_gate(slos)
    workloads = sorted(
        {workload_of(r) for run in runs for r in run.records}, key=lambda w: (w.api, w.context, w.max_tokens)
    )
    verdicts = []
    for workload in workloads:
        per_run = []
        for run in runs:
            records = sorted((r for r in run.records if workload_of(r) == workload), key=lambda r: r.max_concurrency)
            if not records:
                continue
            cells = tuple(Cell.judged(run, r, gates, allow_untrusted=allow_untrusted) for r in records)
            eligible = [cell for cell in cells if cell.eligible]
            chosen = min(eligible, key=lambda c: c.record.cost_per_1m_output_tokens_usd or 0.0, default=None)
            per_run.append(RunVerdict(run, cells, chosen))
        verdicts.append(_verdict(workload, per_run, gates))
    return verdicts


def _capacity_cost(verdict: RunVerdict) -> float | None:
    """Price per hour per request/s of the chosen cell: what one unit of throughput costs an hour."""
    price = verdict.run.price_per_hour_usd
    chosen = verdict.chosen
    if price is None or chosen is None or not chosen.record.request_throughput:
        return None
    return price / chosen.record.request_throughput


def _chosen_cost(verdict: RunVerdict) -> float:
    assert verdict.chosen is not None
    return verdict.chosen.record.cost_per_1m_output_tokens_usd or 0.0


def _verdict(workload: Workload, per_run: list[RunVerdict], gates: Sequence[Slo]) -> WorkloadVerdict:
    costs = [c for c in (_capacity_cost(v) for v in per_run) if c is not None]
    reference = min(costs, default=None)
    with_break_even = []
    for verdict in per_run:
        own = _capacity_cost(verdict)
        hours = None
        if reference is not None and own is not None and verdict.run.scales_to_zero:
            hours = 24 * reference / own
        with_break_even.append(RunVerdict(verdict.run, verdict.cells, verdict.chosen, hours))
    chosen = [v for v in with_break_even if v.chosen is not None]
    slo_text = ", ".join(slo.describe() for slo in gates)
    if not chosen:
        return WorkloadVerdict(workload, tuple(with_break_even), None, f"no measured, trusted cell meets {slo_text}")
    cheapest = min(chosen, key=_chosen_cost)
    assert cheapest.chosen is not None
    record = cheapest.chosen.record
    reason = (
        f"{cheapest.run.label} ({cheapest.run.accelerator}) at {record.load} meets {slo_text} "
        f"for ${readable(record.cost_per_1m_output_tokens_usd)} per 1M output tokens"
    )
    return WorkloadVerdict(workload, tuple(with_break_even), cheapest, reason)
