"""What a person sees while a sweep runs and when it ends: a progress bar and summary tables (rich).

Why separate from the sweep: the sweep is data first and runs the same in tests without a terminal;
the progress bar writes to stderr so stdout stays clean for ``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Self

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from verify.bench.caveats import other_warnings, too_few_samples, trusted, untrusted_reason, untrusted_summary
from verify.bench.compare import (
    LEGEND,
    CellComparison,
    Delta,
    Mismatch,
    Verdict,
    caveat_notes,
    headings_of,
    tally,
)
from verify.bench.open_loop import HELD_BY_CAP, SCHEDULE_BEHIND
from verify.bench.results import CellRecord
from verify.bench.trust import UNTRUSTED_ADVICE
from verify.numbers import percent, readable
from verify.streaming import StreamResult
from verify.terminal import markup_safe


class ProgressObserver:
    """One bar per cell: requests done of the cell's total, and failures so far."""

    def __init__(self, console: Console, *, cells: int) -> None:
        self._console = console
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self._cells = cells
        self._done_cells = 0
        self._task: TaskID | None = None
        self._failed = 0

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._progress.stop()

    def cell_started(self, label: str, requests: int) -> None:
        self._failed = 0
        description = f"[{self._done_cells + 1}/{self._cells}] {label}"
        self._task = self._progress.add_task(description, total=requests, failed=0)

    def request_finished(self, result: StreamResult) -> None:
        if self._task is None:
            return
        if not result.ok:
            self._failed += 1
        self._progress.update(self._task, advance=1, failed=self._failed)

    def cell_finished(self, record: CellRecord) -> None:
        # Skips and warnings are not printed here: the summary under the table says each once, on one line
        # per cell (printing them here too doubled every warning on a busy machine).
        self._done_cells += 1
        self._task = None


# Wide enough that a table's measurement is its natural width, not the console's.
UNBOUNDED = 100_000


def _footnote(record: CellRecord) -> str:
    """What the reader must know about a cell's numbers, printed under the table (any width)."""
    if not record.measured:
        return f"skipped: {markup_safe(record.skip_reason or '')}"
    notes = []
    reason = untrusted_reason(record)
    if reason is not None:
        notes.append(f"[red]{markup_safe(reason)}[/]")
    if record.failed:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(record.errors.items()))
        notes.append(f"{record.failed} failed ({markup_safe(kinds)})")
    if record.platform_limited:
        notes.append("platform limit")
    if record.exceeds_ceiling:
        notes.append("[red]above physical ceiling[/]")
    notes.extend(markup_safe(warning) for warning in other_warnings(record))
    return "; ".join(notes)


def _compact_table(title: str) -> Table:
    """Headers of at most two short lines and one space between columns: a dozen numbers fit 80 columns."""
    return Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), show_edge=False, title_justify="left")


def _percentile(record: CellRecord, field: str) -> str:
    """The value, or ``n<72`` when the cell had fewer samples than that percentile needs."""
    minimum = too_few_samples(record, field)
    return f"n<{minimum}" if minimum is not None else readable(getattr(record, field))


def open_loop_advice(records: Sequence[CellRecord]) -> str | None:
    """What to do when every untrusted cell is an open-loop schedule that was not kept (None otherwise): more
    worker processes are no answer there (an open loop is sent from one process)."""
    reasons = [untrusted_reason(r) or "" for r in records if r.measured and not r.trusted]
    if not reasons or not all(SCHEDULE_BEHIND in reason for reason in reasons):
        return None
    if all(HELD_BY_CAP in reason for reason in reasons):
        return (
            "the server did not keep up with the rate: lower --request-rate (--find-max-rate finds the highest it "
            "keeps), or raise --max-in-flight to measure the queue as latency"
        )
    return "send from a machine with CPU to spare, or beside the service (--on-cloud-run)"


def summary_table(records: Sequence[CellRecord], *, advice: str = UNTRUSTED_ADVICE) -> Group:
    """One row per cell, then a numbered note per cell that has one (failures, warnings, skips).

    Why notes under the table rather than in a column: a notes column squeezed every other column
    to "conte…" at 80 columns; text below a table wraps at any width.
    """
    ordered = sorted(records, key=lambda r: (r.requested_context, r.request_rate or 0.0, r.max_concurrency))
    priced = any(r.cost_per_1m_output_tokens_usd is not None for r in ordered)
    open_loop = any(r.request_rate is not None for r in ordered)
    good = any(r.goodput_share is not None for r in ordered)
    footnotes = {id(r): _footnote(r) for r in ordered}
    noted = any(footnotes.values())
    load = "rate\n/s" if open_loop else "users"
    headings = ["context", "actual", load, "req/s", "out\ntok/s", "TTFT\np50 ms", "TTFT\np95 ms", "TPOT\nms"]
    headings += ["E2EL\np95 ms", "success"]
    headings += ["good\nput"] if good else []
    headings += ["$/1M\nout tok"] if priced else []
    headings += ["note"] if noted else []
    table = _compact_table("verify bench")
    for heading in headings:
        table.add_column(heading, justify="right", no_wrap=True)
    lines: list[str] = []
    for record in ordered:
        shown = str(record.max_concurrency) if record.request_rate is None else f"{record.request_rate:g}"
        row = [str(record.requested_context), readable(record.actual_context), shown]
        note = footnotes[id(record)]
        mark = ""
        if note:
            lines.append(f"[bold]{len(lines) + 1}[/] {record.short_label}: {note}")
            mark = f"[yellow]{len(lines)}[/]"
        if not record.measured:
            row += ["-"] * (len(headings) - len(row) - int(noted))
        else:
            success = record.success_rate or 0.0
            row += [
                readable(record.request_throughput),
                readable(record.output_throughput),
                _percentile(record, "median_ttft_ms"),
                _percentile(record, "p95_ttft_ms"),
                readable(record.mean_tpot_ms),
                _percentile(record, "p95_e2el_ms"),
                f"[{'green' if success == 1.0 else 'red'}]{percent(success)}[/]",
            ]
            row += [percent(record.goodput_share)] if good else []
            row += [readable(record.cost_per_1m_output_tokens_usd)] if priced else []
        row += [mark] if noted else []
        table.add_row(*row)
    untrusted = untrusted_summary(ordered)
    if untrusted is not None:
        lines.append(f"[yellow]{markup_safe(untrusted)}[/]: {markup_safe(open_loop_advice(ordered) or advice)}")
    return Group(table, *(Text.from_markup(line) for line in lines))


def _colour(delta: Delta) -> str:
    return {
        Verdict.BETTER: "green",
        Verdict.WORSE: "red",
        Verdict.NOISE: "dim",
        Verdict.SAME: "dim",
        Verdict.UNTRUSTED: "dim",
    }.get(delta.verdict or Verdict.UNKNOWN, "default")


def _values_table(rows: Sequence[CellComparison], title: str) -> Table:
    table = _compact_table(title)
    table.add_column("context x users", no_wrap=True)
    for heading in headings_of(rows):
        table.add_column(heading, justify="right", no_wrap=True)
    for row in rows:
        cells = [f"[{_colour(d)}]{markup_safe(d.render())}[/]" for d in row.deltas]
        table.add_row(_row_label(row), *_or_status(row, cells))
    return table


def _changes_table(rows: Sequence[CellComparison], title: str) -> Table:
    table = _compact_table(title)
    table.add_column("context\nx users", no_wrap=True)
    for heading in headings_of(rows):
        table.add_column(heading.replace(" ", "\n", 1), justify="right", no_wrap=True)
    for row in rows:
        cells = [f"[{_colour(d)}]{d.shown_change()} {d.mark}[/]" for d in row.deltas]
        table.add_row(_row_label(row), *_or_status(row, cells))
    return table


def _row_label(row: CellComparison) -> str:
    return row.label + (" [yellow]⚠[/]" if row.caveat else "")


def _or_status(row: CellComparison, cells: list[str]) -> list[str]:
    status = row.status()
    return [status, *[""] * (len(cells) - 1)] if status else cells


# What to do about cells over their physical ceiling: no rerun on a bigger client fixes a wrong claim.
CEILING_ADVICE = "check the model, accelerator and speculative decoding the file records against what served it"


def untrusted_advice(rows: Sequence[CellComparison]) -> str | None:
    """The one line that says what to do about untrusted cells in a comparison (None when there are none): the
    client advice when a client was CPU-bound, the claim's when every untrusted cell is over its ceiling."""
    deltas = [delta for row in rows for delta in row.deltas]
    untrusted = [r for row in rows for r in (row.a, row.b) if r is not None and r.measured and not trusted(r)]
    over = bool(untrusted) and all("physical ceiling" in (untrusted_reason(r) or "") for r in untrusted)
    advice = CEILING_ADVICE if over else UNTRUSTED_ADVICE
    if any(delta.verdict is Verdict.UNTRUSTED for delta in deltas):
        return f"untrusted cells are not judged: --allow-untrusted shows their would-be verdicts; {advice}"
    if any(delta.would_be for delta in deltas):
        return f"verdicts marked * are on untrusted cells; for real ones, {advice}"
    return None


def comparison_view(
    rows: Sequence[CellComparison], *, a_name: str, b_name: str, width: int, mismatches: Sequence[Mismatch] = ()
) -> Group:
    """A -> B values per cell where they fit ``width``; only the changes where they do not (80 columns).

    Either way: the workload differences first, the tally, the table, then the legend.
    """
    title = f"{a_name} (A) → {b_name} (B)"
    table = _values_table(rows, title)
    measuring = Console(width=width)
    natural = Measurement.get(measuring, measuring.options.update_width(UNBOUNDED), table).maximum
    if natural > width:
        table = _changes_table(rows, title + ", change")
        legend = f"{LEGEND}. Each cell: B's change against A; --markdown FILE writes A → B values too."
    else:
        legend = f"{LEGEND}."
    parts: list[RenderableType] = [
        Text.from_markup(f"[yellow]workload differs[/] {markup_safe(m.describe())}") for m in mismatches
    ]
    parts += [Text(tally(rows), style="bold"), table, Text(legend, style="dim")]
    parts += [Text.from_markup(f"[yellow]⚠[/] {markup_safe(note)}") for note in caveat_notes(rows)]
    advice = untrusted_advice(rows)
    if advice is not None:
        parts.append(Text(advice, style="yellow"))
    return Group(*parts)
