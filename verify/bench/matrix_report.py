"""The N-run comparison drawn: a Markdown table per workload, a CSV of every cell, a PNG of the costs.

Rendering only reads verify/bench/matrix.py's verdicts; it decides nothing. Untrusted, skipped and
SLO-missing cells appear with their mark, so a reader sees what was left out of the verdict and why.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from remote.text import escape_controls
from verify.bench.caveats import trusted
from verify.bench.chart import INK, PALETTE, chart_font, fitting_font
from verify.bench.matrix import HOURS_PER_MONTH, RunVerdict, WorkloadVerdict
from verify.bench.slo import Slo
from verify.numbers import plain, readable

WIDTH = 1200
ROW = 30


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${readable(value)}"


def _hours(verdict: RunVerdict) -> str:
    if not verdict.run.scales_to_zero:
        return "n/a (bills while it exists)"
    if verdict.break_even_hours is None:
        return "-"
    return "any (24+)" if verdict.break_even_hours >= 24 else f"{verdict.break_even_hours:.1f} h/day"


DEFAULT_LATENCY_FIELDS = ("p99_ttft_ms", "p99_e2el_ms")


def latency_fields(slos: Sequence[Slo]) -> tuple[str, ...]:
    """The latency columns: the SLO's own statistics (an SLO on p95 is shown against p95, not p99), else p99."""
    named = tuple(dict.fromkeys(slo.key for slo in slos if slo.key.endswith("_ms")))
    return named or DEFAULT_LATENCY_FIELDS


def _heading(field: str) -> str:
    """``p95_ttft_ms`` -> ``p95 TTFT ms``."""
    statistic, metric, _ = field.split("_")
    return f"{statistic} {metric.upper()} ms"


def markdown(
    verdicts: Sequence[WorkloadVerdict],
    *,
    active_hours: float,
    slo_text: str,
    latencies: Sequence[str] = DEFAULT_LATENCY_FIELDS,
) -> str:
    lines = [
        "# Stacks compared",
        "",
        (
            f"SLO: {slo_text}. Costs at list prices from each run's own billing shape; monthly at "
            f"{HOURS_PER_MONTH:g} h, scaled to zero while active {active_hours:g} h/day. Chosen cell per run: the "
            "measured, trusted cell meeting the SLO at the lowest cost per 1M output tokens."
        ),
    ]
    for verdict in verdicts:
        lines += ["", f"## {verdict.workload.describe()}", "", f"**Cheapest meeting the SLO:** {verdict.reason}", ""]
        shown = " | ".join(_heading(field) for field in latencies)
        lines += [
            (
                f"| run | accelerator | model | load | req/s | output tok/s | {shown} | $/1M req "
                "| $/1M output tok | always on $/month | scaled to zero $/month | break-even active hours |"
            ),
            "| --- | --- | --- | ---: | ---: | ---: |"
            + " ---: |" * len(latencies)
            + " ---: | ---: | ---: | ---: | --- |",
        ]
        for run in verdict.runs:
            chosen = run.chosen
            monthly = (
                f"{_usd(run.run.always_on_monthly_usd())} | {_usd(run.run.scaled_to_zero_monthly_usd(active_hours))}"
            )
            if chosen is None:
                lines.append(
                    f"| {run.run.label} | {_one_line(run.run.accelerator)} | {_one_line(run.run.model)} | - | - | - | "
                    + "- | " * len(latencies)
                    + f"- | - | {monthly} | - |"
                )
                continue
            record = chosen.record
            lines.append(
                # "?": an untrusted cell, chosen only because --allow-untrusted let it be judged.
                f"| {run.run.label} | {_one_line(run.run.accelerator)} | {_one_line(run.run.model)} | {record.load}"
                f"{'' if record.trusted else '?'} "
                f"| {readable(record.request_throughput)} | {readable(record.output_throughput)} "
                f"| {' | '.join(readable(getattr(record, field)) for field in latencies)} "
                f"| {_usd(record.cost_per_1m_requests_usd)} | {_usd(record.cost_per_1m_output_tokens_usd)} "
                f"| {monthly} | {_hours(run)} |"
            )
        lines += ["", "Prices (per hour):", *(_price_line(run) for run in verdict.runs)]
        left_out = [
            f"- {cell.run.label}, {cell.record.load}: {_one_line(cell.mark)}"
            for run in verdict.runs
            for cell in run.cells
            if cell.mark
        ]
        if left_out:
            lines += ["", "Left out of the verdict:", *left_out]
    # Model names, accelerators and reasons come from the files (a served name is the server's text).
    return escape_controls("\n".join(lines) + "\n")


def _one_line(text: str) -> str:
    """A value from a file inside one line of the table: its newlines and controls shown as escapes."""
    return escape_controls(text, keep_newlines=False)


def _price_line(verdict: RunVerdict) -> str:
    """The price a run was judged at, where it comes from, and the recorded one beside it when they differ."""
    run = verdict.run
    recorded = run.recorded_price_per_hour_usd
    beside = f" (recorded {_usd(recorded)})" if recorded is not None and recorded != run.price_per_hour_usd else ""
    flag = f" **{run.price_problem}**" if run.price_problem else ""
    return f"- {run.label}: {_usd(run.price_per_hour_usd)}{beside}: {run.price_note or 'recorded'}.{flag}"


CSV_COLUMNS = (
    "api",
    "context",
    "max_tokens",
    "run",
    "accelerator",
    "platform",
    "model",
    "concurrency",
    "request_rate",
    "status",
    "trusted",
    "mark",
    "chosen",
    "request_throughput",
    "output_throughput",
    "p99_ttft_ms",
    "p99_e2el_ms",
    "price_per_hour_usd",
    "cost_per_1m_requests_usd",
    "cost_per_1m_output_tokens_usd",
    "always_on_monthly_usd",
    "break_even_active_hours",
    "cheapest",
)


def csv_text(verdicts: Sequence[WorkloadVerdict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for verdict in verdicts:
        for run in verdict.runs:
            for cell in run.cells:
                record = cell.record
                writer.writerow(
                    [
                        verdict.workload.api,
                        verdict.workload.context,
                        verdict.workload.max_tokens,
                        run.run.label,
                        run.run.accelerator,
                        run.run.platform or "",
                        run.run.model,
                        record.max_concurrency,
                        plain(record.request_rate),
                        record.status,
                        trusted(record),
                        cell.mark,
                        cell is run.chosen,
                        plain(record.request_throughput),
                        plain(record.output_throughput),
                        plain(record.p99_ttft_ms),
                        plain(record.p99_e2el_ms),
                        plain(record.price_per_hour_usd),
                        plain(record.cost_per_1m_requests_usd),
                        plain(record.cost_per_1m_output_tokens_usd),
                        plain(run.run.always_on_monthly_usd()),
                        plain(run.break_even_hours),
                        verdict.cheapest is run and cell is run.chosen,
                    ]
                )
    return out.getvalue()


def chart_png(verdicts: Sequence[WorkloadVerdict], path: Path) -> bool:
    """Bars of each run's chosen cost per 1M output tokens, one group per workload; False when nothing was
    chosen anywhere (an empty chart says nothing)."""
    groups = [(v, [r for r in v.runs if r.chosen is not None]) for v in verdicts]
    groups = [(v, runs) for v, runs in groups if runs]
    if not groups:
        return False
    labels = sorted({run.run.label for _, runs in groups for run in runs})
    colours = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}
    rows = sum(len(runs) + 1 for _, runs in groups)
    height = 90 + rows * ROW + 40
    image = Image.new("RGB", (WIDTH, height), "white")
    draw = ImageDraw.Draw(image)
    title = "Cost per 1M output tokens of each run's chosen cell (meets the SLO, trusted), per workload"
    draw.text((WIDTH / 2, 16), title, fill=INK, font=fitting_font(draw, title, 18), anchor="mt")
    top = max(_cost(run) for _, runs in groups for run in runs) or 1.0
    font, left, right = chart_font(14), 420, WIDTH - 140
    y = 60
    for verdict, runs in groups:
        draw.text((20, y + ROW / 2), verdict.workload.describe(), fill=INK, font=chart_font(15), anchor="lm")
        y += ROW
        for run in runs:
            cost = _cost(run)
            width = (right - left) * cost / top
            cheapest = verdict.cheapest is run
            label = f"{run.run.label} ({_one_line(run.run.accelerator)}){'  <- cheapest' if cheapest else ''}"
            draw.text((left - 10, y + ROW / 2), label, fill=INK, font=font, anchor="rm")
            draw.rectangle((left, y + 5, left + max(width, 1), y + ROW - 5), fill=colours[run.run.label])
            draw.text((left + width + 8, y + ROW / 2), f"${readable(cost)}", fill=INK, font=font, anchor="lm")
            y += ROW
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)
    return True


def _cost(run: RunVerdict) -> float:
    return (run.chosen.record.cost_per_1m_output_tokens_usd or 0.0) if run.chosen else 0.0
