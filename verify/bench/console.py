"""What a person sees while a sweep runs and when it ends: a progress bar and summary tables (rich).

Why separate from the sweep: the sweep is data first and runs the same in tests without a terminal;
the progress bar writes to stderr so stdout stays clean for ``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from verify.bench.compare import COMPARED, CellComparison, Delta
from verify.bench.results import CellRecord
from verify.streaming import StreamResult


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
        self._done_cells += 1
        if not record.measured:
            self._console.print(
                f"[yellow]skipped[/] context {record.requested_context} x concurrency {record.max_concurrency}: "
                f"{record.skip_reason}"
            )
        for warning in record.warnings:
            self._console.print(f"[yellow]warning[/] {warning}")
        self._task = None


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _notes(record: CellRecord) -> str:
    notes = []
    if record.failed:
        notes.append(", ".join(f"{kind} {count}" for kind, count in sorted(record.errors.items())))
    if record.platform_limited:
        notes.append("platform limit")
    if record.exceeds_ceiling:
        notes.append("[red]above physical ceiling[/]")
    return "; ".join(notes)


def summary_table(records: Sequence[CellRecord]) -> Table:
    """One row per cell; the cost and notes columns only when some cell has one."""
    ordered = sorted(records, key=lambda r: (r.requested_context, r.max_concurrency))
    priced = any(r.cost_per_1m_output_tokens_usd is not None for r in ordered)
    noted = any(not r.measured or _notes(r) for r in ordered)
    headings = ["context", "actual", "users", "req/s", "out tok/s", "TTFT p50 ms", "TPOT ms", "E2EL p99 ms", "success"]
    headings += ["$/1M out tok"] if priced else []
    headings += ["notes"] if noted else []
    table = Table(title="verify bench")
    for heading in headings:
        table.add_column(heading, justify="left" if heading == "notes" else "right")
    for record in ordered:
        row = [str(record.requested_context), _num(record.actual_context, 5), str(record.max_concurrency)]
        if not record.measured:
            row += [""] * (len(headings) - len(row) - 1) + ["skipped"]
            table.add_row(*row)
            continue
        success = record.success_rate or 0.0
        row += [
            _num(record.request_throughput),
            _num(record.output_throughput),
            _num(record.median_ttft_ms),
            _num(record.mean_tpot_ms, 3),
            _num(record.p99_e2el_ms),
            f"[{'green' if success == 1.0 else 'red'}]{success * 100:.1f}%[/]",
        ]
        row += [_num(record.cost_per_1m_output_tokens_usd, 3)] if priced else []
        row += [_notes(record)] if noted else []
        table.add_row(*row)
    return table


def _delta_cell(delta: Delta) -> str:
    colour = {True: "green", False: "red", None: "default"}[delta.better]
    return f"[{colour}]{delta.render()}[/]"


def comparison_table(rows: Sequence[CellComparison], *, a_name: str, b_name: str) -> Table:
    table = Table(title=f"{a_name} (A) → {b_name} (B)")
    table.add_column("context x users")
    for _, heading, _ in COMPARED:
        table.add_column(heading, justify="right")
    for row in rows:
        status = row.status()
        if status:
            table.add_row(row.label, status, *[""] * (len(COMPARED) - 1))
        else:
            table.add_row(row.label, *[_delta_cell(delta) for delta in row.deltas])
    return table
