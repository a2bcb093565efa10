"""Reports rendered from the results file alone: CSV, Markdown matrices and a PNG chart.

Why from the file and not from memory: a resumed or interrupted sweep, or one run last week, must
render the same way, and the file is the single source of truth. The CSV keeps the order and
meaning of the columns the team's hand-made sweeps used, with the unit in every latency header
(``avg_latency_s``: seconds, as before); the JSONL keys are untouched.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from verify.bench.caveats import too_few_samples, trusted, untrusted_note
from verify.bench.chart import chart_png
from verify.bench.results import CellRecord
from verify.bench.slo import cell_label
from verify.bench.workload import Workload
from verify.numbers import percent, plain, readable

# Before units were added the latency headers were ``avg_latency`` and ``p95_latency`` (seconds then too).
# Beside a number measured by a load generator that was the bottleneck (the record's ``trusted``).
UNTRUSTED_MARK = "?"
# Beside a number whose cell has warnings (see Notes).
WARNING_MARK = "⚠"

CSV_COLUMNS = (
    "context_size",
    "concurrency",
    "success_rate",
    "avg_latency_s",
    "p95_latency_s",
    "req_per_sec",
    "tokens_per_sec",
)
# Added after the team's columns (which keep their order): the percentiles capacity reviews read, each with
# its 95% interval (empty when too few samples for one: verify.bench.confidence), goodput and the open loop.
PERCENTILE_COLUMNS = tuple(
    f"{statistic}_{metric}_ms{suffix}"
    for metric in ("ttft", "tpot", "e2el")
    for statistic in ("median", "p90", "p95", "p99")
    for suffix in ("", "_ci_low", "_ci_high")
)
# The Markdown's percentile matrices: TTFT and E2EL at p50/p90/p95/p99, TPOT at p95 (its mean follows).
PERCENTILE_MATRICES = (
    *(
        (f"{stat}_ttft_ms", f"{shown} TTFT")
        for stat, shown in (("median", "Median"), ("p90", "P90"), ("p95", "P95"), ("p99", "P99"))
    ),
    ("p95_tpot_ms", "P95 TPOT"),
    *(
        (f"{stat}_e2el_ms", f"{shown} E2EL")
        for stat, shown in (("median", "Median"), ("p90", "P90"), ("p95", "P95"), ("p99", "P99"))
    ),
)
EXTRA_COLUMNS = (
    *PERCENTILE_COLUMNS,
    "request_rate",
    "achieved_request_rate",
    "goodput_req_per_sec",
    "goodput_share",
    "trusted",
)


def _ms_to_s(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def csv_text(records: Sequence[CellRecord]) -> str:
    """One row per measured cell (skipped cells have no numbers to put in these columns)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow((*CSV_COLUMNS, *EXTRA_COLUMNS))
    for record in sorted(_measured(records), key=_order):
        writer.writerow(
            [
                record.requested_context,
                record.max_concurrency,
                plain(record.success_rate),
                plain(_ms_to_s(record.mean_e2el_ms)),
                plain(_ms_to_s(record.p95_e2el_ms)),
                plain(record.request_throughput),
                plain(record.output_throughput),
                *(_percentile_cell(record, column) for column in PERCENTILE_COLUMNS),
                plain(record.request_rate),
                plain(record.achieved_request_rate),
                plain(record.goodput_request_rate),
                plain(record.goodput_share),
                "yes" if trusted(record) else "no",
            ]
        )
    return out.getvalue()


def _order(record: CellRecord) -> tuple[int, float]:
    return (record.requested_context, _column(record))


def _column(record: CellRecord) -> float:
    """Where a cell sits across: its rate (open loop) or its users (closed loop)."""
    return record.request_rate if record.request_rate is not None else record.max_concurrency


def _percentile_cell(record: CellRecord, column: str) -> str:
    """A percentile column of the CSV (``p95_ttft_ms``, ``p95_ttft_ms_ci_low``...): empty when the cell had too
    few samples for that percentile, or no interval."""
    field, _, bound = column.partition("_ci_")
    if too_few_samples(record, field) is not None:
        return ""
    if not bound:
        return plain(getattr(record, field))
    interval = record.ci.get(field)
    return "" if interval is None else plain(interval[0] if bound == "low" else interval[1])


def _measured(records: Sequence[CellRecord]) -> list[CellRecord]:
    return [record for record in records if record.measured]


def _latest_by_cell(records: Sequence[CellRecord]) -> dict[tuple[int, float], CellRecord]:
    """The last line wins when a cell appears twice (e.g. a file two runs appended to)."""
    return {(record.requested_context, _column(record)): record for record in records}


def _matrix(title: str, cells: dict[tuple[int, float], CellRecord], value: Callable[[CellRecord], str]) -> list[str]:
    contexts = sorted({context for context, _ in cells})
    concurrencies = sorted({concurrency for _, concurrency in cells})
    across = "rate (req/s)" if any(r.request_rate is not None for r in cells.values()) else "concurrency"
    lines = [
        f"### {title}",
        "",
        f"| context \\ {across} | " + " | ".join(f"{c:g}" for c in concurrencies) + " |",
        "| --- |" + " ---: |" * len(concurrencies),
    ]
    for context in contexts:
        row = []
        for concurrency in concurrencies:
            record = cells.get((context, concurrency))
            if record is None:
                row.append("")
            elif not record.measured:
                row.append("skipped")
            else:
                row.append(value(record) + _marks(record))
        lines.append(f"| {context} | " + " | ".join(row) + " |")
    lines.append("")
    return lines


def _marks(record: CellRecord) -> str:
    doubt = UNTRUSTED_MARK if not trusted(record) else WARNING_MARK if record.warnings else ""
    return ("†" if record.platform_limited else "") + ("‼" if record.exceeds_ceiling else "") + doubt


def markdown_report(records: Sequence[CellRecord], *, metrics_summary: str | None = None) -> str:
    """The report a person reads: what was measured, the matrices, then everything that needs a look."""
    cells = _latest_by_cell(records)
    if not cells:
        return "# Benchmark report\n\nNo cells in the results file.\n"
    first = next(iter(cells.values()))
    workload = Workload.of(list(cells.values()))
    lines = [
        f"# Benchmark report: {workload.model} at {workload.endpoint}",
        "",
        f"- date: {workload.date}",
        (f"- workload: {workload.requests()} (ignore_eos, streamed); {workload.grid()}"),
        (
            f"- endpoint: platform {first.platform or 'unknown'}, accelerator {workload.accelerator}, "
            f"vLLM {workload.vllm_version}, max_model_len {first.max_model_len or 'unknown'}"
        ),
        f"- client transport: {first.transport or 'unknown'}; prompt lengths from {first.prompt_length_source or '-'}",
        (
            "- marks: † failures at a concurrency above what Cloud Run admits (platform limit); ‼ faster than the "
            f"hardware can compute (the number cannot be true); {UNTRUSTED_MARK} untrusted: the sweep says the load "
            f"generator, not the server, set these numbers; {WARNING_MARK} the cell has warnings (see Notes)"
        ),
        "",
    ]
    lines += _matrix("Request throughput (req/s)", cells, lambda r: readable(r.request_throughput))
    lines += _matrix("Output throughput (tok/s)", cells, lambda r: readable(r.output_throughput))
    if any(r.request_rate is not None for r in cells.values()):
        lines += _matrix("Achieved send rate (req/s)", cells, lambda r: readable(r.achieved_request_rate))
    if any(r.goodput_share is not None for r in cells.values()):
        slo = next(r.goodput_slo for r in cells.values() if r.goodput_slo)
        lines += _matrix(f"Goodput (req/s meeting {slo}; share of requests)", cells, _goodput)
    for field, title in PERCENTILE_MATRICES:
        lines += _matrix(f"{title} (ms) [95% CI]", cells, functools.partial(with_interval, field=field))
    lines += _matrix("Mean TPOT (ms)", cells, lambda r: readable(r.mean_tpot_ms))
    lines += _matrix("Success rate", cells, lambda r: percent(r.success_rate or 0.0))
    if any(r.prefix_cache_hit_rate is not None for r in cells.values()):
        lines += _matrix("Prefix-cache hit rate (server)", cells, lambda r: percent(r.prefix_cache_hit_rate))
    if any(r.needle_recall is not None for r in cells.values()):
        lines += _matrix("Needle recall (answers holding their passcode)", cells, lambda r: percent(r.needle_recall))
    lines += _matrix("Actual mean prompt tokens", cells, lambda r: readable(r.actual_context))
    if any(r.cost_per_1m_output_tokens_usd is not None for r in cells.values()):
        price = next(r.price_per_hour_usd for r in cells.values() if r.price_per_hour_usd is not None)
        lines += _matrix(
            f"Cost per 1M output tokens (USD, at ${price:g}/hour)",
            cells,
            lambda r: readable(r.cost_per_1m_output_tokens_usd),
        )
        lines += _matrix("Cost per 1M requests (USD)", cells, lambda r: readable(r.cost_per_1m_requests_usd))
        basis = next((r.price_basis for r in cells.values() if r.price_basis), None)
        lines += [f"Cost basis: {basis}.", ""] if basis else []
    lines += _notes(list(cells.values()))
    if metrics_summary:
        lines += ["## Server metrics (/metrics) over the sweep", "", metrics_summary, ""]
    return "\n".join(lines)


def with_interval(record: CellRecord, field: str) -> str:
    """``212 [198-231]``; ``n<72`` when the cell had fewer samples than that percentile's interval needs."""
    minimum = too_few_samples(record, field)
    if minimum is not None:
        return f"n<{minimum}"
    interval = record.ci.get(field)
    shown = readable(getattr(record, field))
    return shown if interval is None else f"{shown} [{readable(interval[0])}-{readable(interval[1])}]"


def _goodput(record: CellRecord) -> str:
    if record.goodput_share is None:
        return "-"
    return f"{readable(record.goodput_request_rate)} ({percent(record.goodput_share)})"


def _notes(records: Sequence[CellRecord]) -> list[str]:
    notes: list[str] = []
    for record in sorted(records, key=_order):
        label = cell_label(record)
        if not record.measured:
            notes.append(f"- {label}: skipped ({record.skip_reason})")
            continue
        untrusted = untrusted_note(record)
        if untrusted:
            notes.append(f"- {label}: {untrusted}")
        notes.extend(f"- {label}: {warning}" for warning in record.warnings)
        if record.failed:
            breakdown = ", ".join(f"{kind} {count}" for kind, count in sorted(record.errors.items()))
            example = f"; e.g. {record.error_examples[0]}" if record.error_examples else ""
            notes.append(f"- {label}: {record.failed} failed ({breakdown}){example}")
    return ["## Notes", "", *notes, ""] if notes else []


def write_reports(records: Sequence[CellRecord], stem: Path, *, metrics_summary: str | None = None) -> list[Path]:
    """``<stem>.csv``, ``<stem>.md`` and ``<stem>.png`` beside the results file; returns what was written."""
    written = []
    csv_path = stem.with_suffix(".csv")
    csv_path.write_text(csv_text(records), encoding="utf-8")
    written.append(csv_path)
    md_path = stem.with_suffix(".md")
    md_path.write_text(markdown_report(records, metrics_summary=metrics_summary), encoding="utf-8")
    written.append(md_path)
    png_path = stem.with_suffix(".png")
    if chart_png(records, png_path):
        written.append(png_path)
    return written
