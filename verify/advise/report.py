"""What `advise` answers, as data first (JSON) and then as the table a person reads."""

from __future__ import annotations

import math
from collections.abc import Callable

import pydantic

from serving.pricing import usd


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class Basis(_Model):
    """Where a number comes from: ``measured`` (a results file, when) or ``estimated`` (formula, facts, error)."""

    kind: str
    source: str
    error: str | None = None


class Row(_Model):
    """One deployment that meets the SLO at the stated load, with every number's basis."""

    rank: int
    model: str
    variant: str
    shape: str
    accelerator: str
    platform: str
    region: str
    provisioning: str
    zone: str | None
    tensor_parallel: int
    replicas: int
    # What bills: Cloud Run instances (one a replica), the TPU node, or GKE nodes (replicas / replicas a node).
    billed_units: int = 1
    batch_cap: int
    max_model_len: int
    p95_ttft_ms: float
    mean_ttft_ms: float
    tpot_ms: float
    requests_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    prefill_share: float
    usd_per_hour: float
    usd_per_month: float
    usd_per_million_input: float | None
    usd_per_million_output: float | None
    scales_to_zero: bool
    latency_basis: Basis
    price_basis: Basis
    cost_split: str
    measured: dict[str, float] | None = None
    # What a user must know before deploying it: support the catalog could not confirm, the planner's warnings.
    caveats: tuple[str, ...] = ()
    # False: no public source shows this variant running on this accelerator (ranked after confirmed rows).
    support_confirmed: bool = True
    # MTP speculative decoding: draft tokens a step the row was estimated with (0: off).
    speculative_tokens: int = 0
    # Quality (serving/data/model-quality.json): the primary benchmark's published score, as shown, its source,
    # and what is published about the variant's loss against bf16.
    quality_score: float | None = None
    quality: str = ""
    quality_source: str = ""
    variant_loss: str | None = None
    # Variants whose row was this one but for the name (the same speed and price).
    same_as: tuple[str, ...] = ()
    # What this row gives up and saves against the next better model above it.
    versus: str | None = None
    # Scale to zero: the share of requests that meet a cold start at the workload's idle gaps.
    cold_start_share: float | None = None
    # What the written stack carries: the workload's tokens a request (capacity.requestTokens), the replicas a
    # billed unit holds, and the replicas the peak needs (the autoscaler's max; the row is priced at its min).
    request_tokens: int = 0
    replicas_per_unit: int = 1
    peak_replicas: int | None = None
    # A batch job: the hours one run bills, and what one run costs (usd_per_month: the month's runs).
    batch_run_hours: float | None = None
    usd_per_run: float | None = None


# Marks a row whose support is unconfirmed, in the table and in the note that explains it.
UNCONFIRMED_MARK = "(?)"


class Exclusion(_Model):
    """One kind of reason combinations were left out, how many, and a few of them."""

    reason: str
    count: int
    examples: tuple[str, ...]


class AdviseReport(_Model):
    # How the rows are chosen and ordered: the cheapest per model, best model first; or one ranking, cheapest first.
    answer: str = "one ranking, cheapest first"
    workload: str
    load: str
    slo: str
    active_hours_per_month: float
    rows: tuple[Row, ...]
    excluded: tuple[Exclusion, ...]
    notes: tuple[str, ...]
    elapsed_s: float

    @property
    def exit_code(self) -> int:
        """0: at least one deployment meets the SLO; 1: none does."""
        return 0 if self.rows else 1


def _ms(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:,.0f}"


def _money(value: float | None) -> str:
    return "-" if value is None else usd(value)


def _beside(row: Row, field: str, shown: Callable[[float], str]) -> str:
    """The estimate, or a measured figure with the estimate beside it: ``1,840 (est 1,620)``."""
    estimate = shown(getattr(row, field))
    measured = (row.measured or {}).get(field)
    return estimate if measured is None else f"{shown(measured)} (est {estimate})"


HEADER = (
    "#",
    "model",
    "quality",
    "variant",
    "shape",
    "platform",
    "TP",
    "replicas",
    "p95 TTFT ms",
    "TPOT ms",
    "req/s",
    "$/1M in",
    "$/1M out",
    "$/h",
    "$/month",
    "basis",
)


def _quality_lines(rows: tuple[Row, ...]) -> list[str]:
    """What each row gives up and saves against the next better model, then where the scores and each variant's
    loss come from (once each)."""
    lines = ["", "quality (the model card's scores; (?) read through a copy):"]
    lines += [f"  #{row.rank} {row.model}: {row.versus}" for row in rows if row.versus]
    for text in dict.fromkeys(f"{row.model}: {row.quality_source}" for row in rows):
        lines.append(f"  scores of {text}")
    for text in dict.fromkeys(
        f"{variant}: {row.variant_loss}" for row in rows for variant in (row.variant,) if row.variant_loss
    ):
        lines.append(f"  loss against bf16 of {text}")
    return lines


def render(report: AdviseReport) -> str:
    """The ranked table, the bases, then one line per kind of exclusion."""
    batch = any(row.batch_run_hours is not None for row in report.rows)
    lines = [
        f"workload: {report.workload}; load: {report.load}; SLO: {report.slo}",
        f"answer: {report.answer}",
        "$/month: each row's runs a month at the hours one run bills (its start included)"
        if batch
        else f"$/month at {report.active_hours_per_month:g} active hours where the platform scales to zero, 730 "
        "otherwise",
        "",
    ]
    rows = [HEADER] + [
        (
            str(row.rank),
            row.model + ("" if row.support_confirmed else f" {UNCONFIRMED_MARK}"),
            row.quality,
            " = ".join((row.variant, *row.same_as))
            + (f" +MTP-{row.speculative_tokens}" if row.speculative_tokens else ""),
            row.shape,
            f"{row.platform} {row.region}" + ("" if row.provisioning == "on-demand" else f" {row.provisioning}"),
            str(row.tensor_parallel),
            str(row.replicas)
            + (f" ({row.billed_units} node{'s' if row.billed_units > 1 else ''})" if row.platform == "gke" else ""),
            _beside(row, "p95_ttft_ms", _ms),
            _beside(row, "tpot_ms", lambda value: f"{value:,.1f}"),
            _beside(row, "requests_per_s", lambda value: f"{value:,.2f}"),
            _money(row.usd_per_million_input),
            _money(row.usd_per_million_output),
            usd(row.usd_per_hour)
            + (
                ""
                if row.batch_run_hours is None
                else f" x {row.batch_run_hours:.2f} h = {usd(row.usd_per_run or 0)}/run"
            ),
            usd(row.usd_per_month),
            "measured, est beside" if row.measured else "estimated",
        )
        for row in report.rows
    ]
    if report.rows:
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines += ["", "bases:"]
        seen: set[str] = set()
        for row in report.rows:
            for label, basis in (("latency", row.latency_basis), ("price", row.price_basis)):
                text = f"{basis.kind}: {basis.source}" + (f" ({basis.error})" if basis.error else "")
                key = f"{label} {text}"
                if key not in seen:
                    seen.add(key)
                    lines.append(f"  #{row.rank} {label}: {text}")
        lines.append(f"  $/1M tokens: {report.rows[0].cost_split}")
        lines += _quality_lines(report.rows)
        cautious = [row for row in report.rows if row.caveats]
        if cautious:
            lines += ["", "caveats:"]
            lines += [f"  #{row.rank}: {'; '.join(row.caveats)}" for row in cautious]
    else:
        lines.append("no deployment meets the SLO at this load within the constraints")
    if report.excluded:
        lines += ["", "excluded:"]
        lines += [f"  {e.reason}: {e.count} (e.g. {'; '.join(e.examples)})" for e in report.excluded]
    lines += [f"note: {note}" for note in report.notes]
    lines.append(f"({report.elapsed_s:.2f} s)")
    return "\n".join(lines) + "\n"
