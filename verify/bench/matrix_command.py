"""`verify compare A B C ...`: three or more runs (or two with ``--matrix``) side by side per workload.

The flags this adds to `compare` and what it prints: the per-workload table (measured throughput and
latency, cost per 1M requests and output tokens, monthly cost always on and scaled to zero, break-even
active hours a day) and the cheapest run meeting the SLO per workload (verify/bench/matrix.py says how
each is decided). ``--markdown``, ``--csv`` and ``--chart`` also write it as files.

Exit codes: 0 compared (whether or not a run met the SLO: the table says so); 2 a file missing, empty or
holding a line verify could not have written (``file:line`` and why, verify/bench/record_checks.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verify import UsageError
from verify.argtypes import positive_number
from verify.bench.matrix import DEFAULT_ACTIVE_HOURS, Run, judge
from verify.bench.matrix_report import chart_png, csv_text, markdown
from verify.bench.results import read_checked
from verify.bench.slo import Slo, parse_slo, with_default_gate

EXIT_OK = 0


def add_matrix_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("three or more runs (or two with --matrix): stacks side by side")
    group.add_argument("more", nargs="*", type=Path, metavar="C.jsonl", help="more results files, one per run")
    group.add_argument("--matrix", action="store_true", help="compare two files as runs side by side, not A vs B")
    group.add_argument(
        "--slo",
        action="append",
        default=[],
        type=_slo,
        metavar="KEY=VALUE",
        help="what the cheapest run must meet, e.g. p99_ttft_ms=2000 (repeatable; success_rate >= 1 by default)",
    )
    group.add_argument(
        "--active-hours",
        type=_hours,
        default=DEFAULT_ACTIVE_HOURS,
        metavar="H",
        help=f"hours a day with traffic, for the scaled-to-zero monthly cost (default {DEFAULT_ACTIVE_HOURS:g})",
    )
    group.add_argument("--csv", type=Path, metavar="FILE.csv", help="also write every cell as CSV")
    group.add_argument("--chart", type=Path, metavar="FILE.png", help="also draw each run's chosen cost as a PNG")


def wants_matrix(args: argparse.Namespace) -> bool:
    return bool(args.more) or bool(args.matrix)


def _slo(text: str) -> Slo:
    try:
        return parse_slo(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _hours(text: str) -> float:
    hours = positive_number("--active-hours", "hours")(text)
    if hours > 24:
        raise argparse.ArgumentTypeError(f"--active-hours is hours a day: at most 24, got {text!r}")
    return hours


def load_runs(paths: list[Path]) -> list[Run]:
    runs = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path} does not exist (compare takes results files of `verify bench`)")
        records = read_checked(path).records
        if not records:
            raise UsageError(f"{path} holds no cell records")
        runs.append(Run(label=path.stem, path=path, records=tuple(records)))
    labels = [run.label for run in runs]
    if len(set(labels)) != len(labels):
        raise UsageError(f"two files share a name ({', '.join(labels)}): the runs would be told apart by it")
    return runs


def run_matrix(paths: list[Path], args: argparse.Namespace) -> int:
    runs = load_runs(paths)
    slos: list[Slo] = list(args.slo)
    verdicts = judge(runs, slos)
    slo_text = ", ".join(slo.describe() for slo in with_default_gate(slos))
    text = markdown(verdicts, active_hours=args.active_hours, slo_text=slo_text)
    sys.stdout.write(text)
    if args.markdown is not None:
        args.markdown.write_text(text, encoding="utf-8")
    if args.csv is not None:
        args.csv.write_text(csv_text(verdicts), encoding="utf-8")
    if args.chart is not None and not chart_png(verdicts, args.chart):
        print(f"compare: no chart: no run has a cell that meets {slo_text}", file=sys.stderr)
    return EXIT_OK
