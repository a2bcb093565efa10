"""`verify compare A B C ...` as a function: ``run_matrix(paths, options) -> MatrixReport``.

Three or more runs (or two with ``--matrix``) side by side per workload: measured throughput and
latency, cost per 1M requests and output tokens, monthly cost always on and scaled to zero, break-even
active hours a day, and the cheapest run meeting the SLO per workload (verify/bench/matrix.py says how
each is decided). ``markdown``, ``csv`` and ``chart`` also write it as files. A run that meets no SLO is
an answer, not a failure (exit 0); a file missing, empty or holding a line verify could not have written
is a ``UsageError`` (``file:line`` and why, verify/bench/record_checks.py). Flags live in verify/bench/cli.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verify import UsageError
from verify.bench.matrix import DEFAULT_ACTIVE_HOURS, Run, WorkloadVerdict, judge
from verify.bench.matrix_report import chart_png, csv_text, latency_fields, markdown
from verify.bench.results import CellRecord, read_checked
from verify.bench.run_pricing import one_value, price_problem, repriced, table_floor
from verify.bench.slo import Slo, with_default_gate


@dataclass(frozen=True, slots=True)
class MatrixOptions:
    slos: tuple[Slo, ...] = ()  # what the cheapest run must meet (success_rate >= 1 by default)
    active_hours: float = DEFAULT_ACTIVE_HOURS  # hours a day with traffic, for the scaled-to-zero cost
    markdown: Path | None = None
    csv: Path | None = None
    chart: Path | None = None
    allow_untrusted: bool = False  # judge cells a sweep marked untrusted too (they are marked as such)


@dataclass(frozen=True, slots=True)
class MatrixReport:
    """The verdict per workload, the Markdown table of them, and whether the asked-for chart was drawn
    (False: no run has a cell that meets ``slo_text``; None: none was asked for)."""

    verdicts: tuple[WorkloadVerdict, ...]
    markdown: str
    slo_text: str
    chart_drawn: bool | None = None


def load_runs(paths: list[Path]) -> list[Run]:
    runs = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path} does not exist (compare takes results files of `gemma-verify bench`)")
        records = read_checked(path).records
        if not records:
            raise UsageError(f"{path} holds no cell records")
        runs.append(priced_run(path, records))
    labels = [run.label for run in runs]
    if len(set(labels)) != len(labels):
        raise UsageError(f"two files share a name ({', '.join(labels)}): the runs would be told apart by it")
    return runs


def priced_run(path: Path, records: list[CellRecord]) -> Run:
    """One file as one run, priced from the price table (verify/bench/run_pricing.py says how); a file
    mixing accelerators or platforms is a ``UsageError``."""
    accelerator = one_value(path, records, "accelerator")
    platform = one_value(path, records, "platform")
    prices = [record.price_per_hour_usd for record in records if record.price_per_hour_usd is not None]
    recorded = min(prices) if prices else None
    floor = table_floor(accelerator, platform)
    problem = price_problem(recorded, floor, accelerator, platform)
    if floor is None:
        price, note = recorded, "recorded; not checked (the price table has no floor for this accelerator and platform)"
    elif recorded is None or recorded < floor:
        price, note = floor, "the price table's least for this accelerator (none recorded, or below it)"
    else:
        price, note = recorded, "recorded; at or above the price table's least for this accelerator"
    return Run(
        label=path.stem,
        path=path,
        records=repriced(records, price),
        recorded_price_per_hour_usd=recorded,
        price_problem=problem,
        price_note=note,
    )


def run_matrix(paths: list[Path], options: MatrixOptions) -> MatrixReport:
    runs = load_runs(paths)
    verdicts = judge(runs, options.slos, allow_untrusted=options.allow_untrusted)
    slo_text = ", ".join(slo.describe() for slo in with_default_gate(options.slos))
    text = markdown(
        verdicts, active_hours=options.active_hours, slo_text=slo_text, latencies=latency_fields(options.slos)
    )
    if options.markdown is not None:
        options.markdown.write_text(text, encoding="utf-8")
    if options.csv is not None:
        options.csv.write_text(csv_text(verdicts), encoding="utf-8")
    drawn = None if options.chart is None else chart_png(verdicts, options.chart)
    return MatrixReport(tuple(verdicts), text, slo_text, drawn)
