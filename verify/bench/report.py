"""Reports rendered from the results file alone: CSV, Markdown matrices and a PNG chart.

Why from the file and not from memory: a resumed or interrupted sweep, or one run last week, must
render the same way, and the file is the single source of truth. The CSV keeps the order and
meaning of the columns the team's hand-made sweeps used, with the unit in every latency header
(``avg_latency_s``: seconds, as before); the JSONL keys are untouched.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from verify.bench.caveats import trusted, untrusted_note
from verify.bench.chart import chart_png
from verify.bench.results import CellRecord
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


def _ms_to_s(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def csv_text(records: Sequence[CellRecord]) -> str:
    """One row per measured cell (skipped cells have no numbers to put in these columns)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in sorted(_measured(records), key=lambda r: (r.requested_context, r.max_concurrency)):
        writer.writerow(
            [
                record.requested_context,
                record.max_concurrency,
                plain(record.success_rate),
                plain(_ms_to_s(record.mean_e2el_ms)),
                plain(_ms_to_s(record.p95_e2el_ms)),
                plain(record.request_throughput),
                plain(record.output_throughput),
            ]
        )
    return out.getvalue()


def _measured(records: Sequence[CellRecord]) -> list[CellRecord]:
    return [record for record in records if record.measured]


def _latest_by_cell(records: Sequence[CellRecord]) -> dict[tuple[int, int], CellRecord]:
    """The last line wins when a cell appears twice (e.g. a file two runs appended to)."""
    return {(record.requested_context, record.max_concurrency): record for record in records}


def _matrix(title: str, cells: dict[tuple[int, int], CellRecord], value: Callable[[CellRecord], str]) -> list[str]:
    contexts = sorted({context for context, _ in cells})
    concurrencies = sorted({concurrency for _, concurrency in cells})
    lines = [
        f"### {title}",
        "",
        "| context \\ concurrency | " + " | ".join(str(c) for c in concurrencies) + " |",
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
    lines += _matrix("Median TTFT (ms)", cells, lambda r: readable(r.median_ttft_ms))
    lines += _matrix("Mean TPOT (ms)", cells, lambda r: readable(r.mean_tpot_ms))
    lines += _matrix("P99 E2EL (ms)", cells, lambda r: readable(r.p99_e2el_ms))
    lines += _matrix("Success rate", cells, lambda r: percent(r.success_rate or 0.0))
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


def _notes(records: Sequence[CellRecord]) -> list[str]:
    notes: list[str] = []
    for record in sorted(records, key=lambda r: (r.requested_context, r.max_concurrency)):
        label = f"context {record.requested_context} x concurrency {record.max_concurrency}"
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
