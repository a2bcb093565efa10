"""Reports rendered from the results file alone: CSV, Markdown matrices and a PNG chart.

Why from the file and not from memory: a resumed or interrupted sweep, or one run last week, must
render the same way, and the file is the single source of truth. The CSV keeps the columns the
team's hand-made sweeps used so existing spreadsheets keep working; latencies there are seconds.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from verify.bench.results import CellRecord

# Beside a number measured by a saturated load generator (verify.bench.trust).
UNTRUSTED_MARK = "?"

CSV_COLUMNS = (
    "context_size",
    "concurrency",
    "success_rate",
    "avg_latency",
    "p95_latency",
    "req_per_sec",
    "tokens_per_sec",
)


def _ms_to_s(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def _fmt(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


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
                _fmt(record.success_rate),
                _fmt(_ms_to_s(record.mean_e2el_ms)),
                _fmt(_ms_to_s(record.p95_e2el_ms)),
                _fmt(record.request_throughput),
                _fmt(record.output_throughput),
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
                marks = ("†" if record.platform_limited else "") + ("‼" if record.exceeds_ceiling else "")
                marks += "" if record.trusted else UNTRUSTED_MARK
                row.append(value(record) + marks)
        lines.append(f"| {context} | " + " | ".join(row) + " |")
    lines.append("")
    return lines


def markdown_report(records: Sequence[CellRecord], *, metrics_summary: str | None = None) -> str:
    """The report a person reads: what was measured, the matrices, then everything that needs a look."""
    cells = _latest_by_cell(records)
    if not cells:
        return "# Benchmark report\n\nNo cells in the results file.\n"
    first = next(iter(cells.values()))
    lines = [
        "# Benchmark report",
        "",
        (
            f"- model: `{first.model}` via the {first.api} API, {first.max_tokens} output tokens per request "
            "(ignore_eos), streamed"
        ),
        (
            f"- endpoint: {first.base_url or 'unknown'} (platform {first.platform or 'unknown'}, accelerator "
            f"{first.accelerator or 'unknown'}, vLLM {first.vllm_version or 'unknown'}, max_model_len "
            f"{first.max_model_len or 'unknown'})"
        ),
        f"- client transport: {first.transport or 'unknown'}; prompt lengths from {first.prompt_length_source or '-'}",
        (
            "- marks: † failures at a concurrency above what Cloud Run admits (platform limit); ‼ faster than the "
            "hardware can compute (the number cannot be true); "
            f"{UNTRUSTED_MARK} untrusted: measured by a load generator that ran out of CPU (see Notes)"
        ),
        "",
    ]
    lines += _matrix("Request throughput (req/s)", cells, lambda r: _fmt(r.request_throughput, 3))
    lines += _matrix("Output throughput (tok/s)", cells, lambda r: _fmt(r.output_throughput, 4))
    lines += _matrix("Median TTFT (ms)", cells, lambda r: _fmt(r.median_ttft_ms, 4))
    lines += _matrix("Mean TPOT (ms)", cells, lambda r: _fmt(r.mean_tpot_ms, 3))
    lines += _matrix("P99 E2EL (ms)", cells, lambda r: _fmt(r.p99_e2el_ms, 4))
    lines += _matrix("Success rate", cells, lambda r: f"{(r.success_rate or 0.0) * 100:.1f}%")
    lines += _matrix("Actual mean prompt tokens", cells, lambda r: _fmt(r.actual_context, 5))
    if any(r.cost_per_1m_output_tokens_usd is not None for r in cells.values()):
        price = next(r.price_per_hour_usd for r in cells.values() if r.price_per_hour_usd is not None)
        lines += _matrix(
            f"Cost per 1M output tokens (USD, at ${price:g}/hour)",
            cells,
            lambda r: _fmt(r.cost_per_1m_output_tokens_usd, 3),
        )
        lines += _matrix("Cost per 1M requests (USD)", cells, lambda r: _fmt(r.cost_per_1m_requests_usd, 3))
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
        notes.extend(f"- {label}: {warning}" for warning in record.warnings)
        if record.failed:
            breakdown = ", ".join(f"{kind} {count}" for kind, count in sorted(record.errors.items()))
            example = f"; e.g. {record.error_examples[0]}" if record.error_examples else ""
            notes.append(f"- {label}: {record.failed} failed ({breakdown}){example}")
    return ["## Notes", "", *notes, ""] if notes else []


def chart_png(records: Sequence[CellRecord], path: Path) -> bool:
    """Throughput and latency against concurrency, one line per context. False without matplotlib
    (a development dependency): the data and the other reports do not need it."""
    try:
        import matplotlib as mpl  # noqa: PLC0415 - optional, and must select Agg before pyplot loads

        mpl.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    measured = _measured(records)
    figure, (throughput, latency) = plt.subplots(1, 2, figsize=(11, 4.2))
    for context in sorted({r.requested_context for r in measured}):
        series = sorted((r for r in measured if r.requested_context == context), key=lambda r: r.max_concurrency)
        users = [r.max_concurrency for r in series]
        throughput.plot(users, [r.request_throughput or 0.0 for r in series], marker="o", label=f"{context} tok")
        latency.plot(users, [r.p99_e2el_ms or 0.0 for r in series], marker="o", label=f"{context} tok")
        doubtful = [r for r in series if not r.trusted]
        if doubtful:
            # Untrusted cells: a red ring around the point, explained in the legend.
            ring = {"marker": "o", "s": 140, "facecolors": "none", "edgecolors": "red", "linewidths": 1.5}
            users_doubtful = [r.max_concurrency for r in doubtful]
            throughput.scatter(users_doubtful, [r.request_throughput or 0.0 for r in doubtful], **ring)
            latency.scatter(users_doubtful, [r.p99_e2el_ms or 0.0 for r in doubtful], **ring)
    for axes, title, unit in (
        (throughput, "Request throughput", "req/s"),
        (latency, "P99 end-to-end latency", "ms"),
    ):
        axes.set_xscale("log", base=2)
        concurrencies = sorted({r.max_concurrency for r in measured})
        axes.set_xticks(concurrencies, [str(c) for c in concurrencies])
        axes.set_xlabel("concurrency (users)")
        axes.set_ylabel(unit)
        axes.set_title(title)
        axes.grid(visible=True, alpha=0.3)
        if any(not r.trusted for r in measured):
            axes.scatter([], [], marker="o", s=140, facecolors="none", edgecolors="red", label="untrusted (client)")
        axes.legend(title="context")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


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
