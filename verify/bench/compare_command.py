"""`python -m verify compare A.jsonl B.jsonl`: flags, wiring and exit codes.

Exit codes: 0 compared; 2 a file is missing, empty or holds a line verify could not have written
(named as ``file:line`` with the reason, as ``--resume`` refuses it), or the two files measured different
workloads (output tokens per request or API) and ``--allow-mismatch`` was not given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from verify import UsageError
from verify.bench import compare as comparing
from verify.bench.console import comparison_view
from verify.bench.matrix_command import add_matrix_arguments, run_matrix, wants_matrix
from verify.bench.results import CellRecord, read_checked

EXIT_OK = 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="per-cell deltas between two bench results files (e.g. MTP on vs off)",
        description="Match cells of A and B on context x concurrency and show B's change against A; changes "
        "within the two runs' own spread are marked as noise. Refuses files whose requests differ in output "
        "tokens or API (--allow-mismatch to compare anyway); warns when model, requests per cell or client "
        "transport differ. Exit codes: 0 compared, 2 usage error or mismatched workloads.",
    )
    parser.add_argument("a", type=Path, metavar="A.jsonl")
    parser.add_argument("b", type=Path, metavar="B.jsonl")
    parser.add_argument("--markdown", type=Path, metavar="FILE.md", help="also write the comparison as Markdown")
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare even when A and B asked for different output tokens per request or API",
    )
    parser.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="also judge cells a sweep marked untrusted (its load generator was CPU-bound): their would-be "
        "verdicts are marked * and counted apart",
    )
    add_matrix_arguments(parser)
    parser.set_defaults(handler=run_compare_command)


def read_side(path: Path) -> list[CellRecord]:
    """One side's cells, every line checked (exit 2 naming ``file:line`` and why, as ``--resume``)."""
    if not path.exists():
        raise UsageError(f"{path} does not exist (compare takes two results files of `verify bench`)")
    loaded = read_checked(path)
    if not loaded.records:
        raise UsageError(f"{path} holds no cell records")
    return loaded.records


def run_compare_command(args: argparse.Namespace) -> int:
    if wants_matrix(args):
        return run_matrix([args.a, args.b, *args.more], args)
    a, b = read_side(args.a), read_side(args.b)
    mismatches = comparing.workload_mismatches(a, b)
    refused = [mismatch for mismatch in mismatches if mismatch.refused]
    if refused and not args.allow_mismatch:
        raise UsageError(
            f"{args.a} and {args.b} measured different workloads, so no cell's change would mean anything: "
            + "; ".join(mismatch.describe() for mismatch in refused)
            + ". Rerun one side with the other's flags, or pass --allow-mismatch to compare anyway."
        )
    rows = comparing.compare(a, b, allow_untrusted=args.allow_untrusted)
    a_name, b_name = args.a.stem, args.b.stem
    console = Console()
    console.print(comparison_view(rows, a_name=a_name, b_name=b_name, width=console.width, mismatches=mismatches))
    if args.markdown is not None:
        args.markdown.write_text(
            comparing.markdown(
                rows,
                a_name=a_name,
                b_name=b_name,
                a_desc=comparing.describe_side(a),
                b_desc=comparing.describe_side(b),
                mismatches=mismatches,
            ),
            encoding="utf-8",
        )
    return EXIT_OK
