"""`verify compare A.jsonl B.jsonl` as a function: ``run_compare(a, b, options) -> CompareReport``.

Refuses (``UsageError``, exit 2) a file that is missing, empty or holds a line verify could not have
written (named as ``file:line`` with the reason, as ``--resume`` refuses it), and two files that measured
different workloads (output tokens per request or API) unless ``allow_mismatch``. Three or more files (or
two as a matrix) are verify/bench/matrix_command.py; flags and rendering live in verify/bench/cli.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verify import UsageError
from verify.bench import compare as comparing
from verify.bench.predicted import estimate_lines
from verify.bench.results import CellRecord, read_checked
from verify.bench.run_pricing import one_value


@dataclass(frozen=True, slots=True)
class CompareOptions:
    markdown: Path | None = None  # also write the comparison here
    allow_mismatch: bool = False  # compare even when A and B asked for different output tokens or API
    allow_untrusted: bool = False  # also judge cells a sweep marked untrusted (marked * and counted apart)
    # The fields the SLOs name (--slo): a latency percentile among them is shown and judged as a column too.
    slo_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompareReport:
    """B's change against A per cell (``rows``), and the workload settings that differ (``mismatches``)."""

    a_name: str
    b_name: str
    rows: tuple[comparing.CellComparison, ...]
    mismatches: tuple[comparing.Mismatch, ...]
    # Each measured cell beside the latency model's estimate for what it claims (verify/bench/predicted.py).
    estimates: tuple[str, ...] = ()


def read_side(path: Path) -> list[CellRecord]:
    """One side's cells, every line checked (exit 2 naming ``file:line`` and why, as ``--resume``)."""
    if not path.exists():
        raise UsageError(f"{path} does not exist (compare takes two results files of `gemma-verify bench`)")
    loaded = read_checked(path)
    if not loaded.records:
        raise UsageError(f"{path} holds no cell records")
    # One file is one run of one stack: cells of two accelerators (or platforms) are two runs.
    one_value(path, loaded.records, "accelerator")
    one_value(path, loaded.records, "platform")
    return loaded.records


def run_compare(a_path: Path, b_path: Path, options: CompareOptions) -> CompareReport:
    """Match the cells of A and B on context x concurrency and judge B's change against A."""
    a, b = read_side(a_path), read_side(b_path)
    mismatches = comparing.workload_mismatches(a, b)
    refused = [mismatch for mismatch in mismatches if mismatch.refused]
    if refused and not options.allow_mismatch:
        raise UsageError(
            f"{a_path} and {b_path} measured different workloads, so no cell's change would mean anything: "
            + "; ".join(mismatch.describe() for mismatch in refused)
            + ". Rerun one side with the other's flags, or pass --allow-mismatch to compare anyway."
        )
    rows = comparing.compare(
        a, b, allow_untrusted=options.allow_untrusted, metrics=comparing.metrics_for(options.slo_keys)
    )
    a_name, b_name = a_path.stem, b_path.stem
    estimates = tuple(
        estimate_lines(
            [(f"{row.label} in {side}", record) for row in rows for side, record in (("A", row.a), ("B", row.b))],
            options.slo_keys,
        )
    )
    if options.markdown is not None:
        options.markdown.write_text(
            comparing.markdown(
                rows,
                a_name=a_name,
                b_name=b_name,
                a_desc=comparing.describe_side(a),
                b_desc=comparing.describe_side(b),
                mismatches=mismatches,
                estimates=estimates,
            ),
            encoding="utf-8",
        )
    return CompareReport(a_name, b_name, tuple(rows), tuple(mismatches), estimates)
