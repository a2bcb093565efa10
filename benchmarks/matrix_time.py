"""How long `make matrix` takes: every catalog model x variant x shape, as a fresh process, both formats.

Issue 26 asks for the whole comparison offline in under 5 s on the project's 2-core machine. This runs
`python -m preview.matrix` (text, then `--format json`) as a user does, a fresh interpreter each time so the
imports count, `--runs` times each, and prints the median, min and max wall seconds per format, the number of
JSON rows (one per combination), and whether the slowest run stayed under `--limit`.

Usage::

    python -m benchmarks.matrix_time [--runs 5] [--limit 5.0]

Exit codes: 0 every run under the limit; 1 a run over it (or the matrix failed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(output_format: str) -> tuple[float, str]:
    """Wall seconds of one `python -m preview.matrix` run, and its stdout."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "preview.matrix", "--format", output_format],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"preview.matrix --format {output_format} exited {result.returncode}: {result.stderr[-500:]}")
    return elapsed, result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.matrix_time", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=float, default=5.0, help="seconds the slowest run may take")
    args = parser.parse_args(argv)
    slowest = 0.0
    for output_format in ("text", "json"):
        times = []
        stdout = ""
        for _ in range(args.runs):
            elapsed, stdout = run_once(output_format)
            times.append(elapsed)
        slowest = max(slowest, *times)
        extra = ""
        if output_format == "json":
            extra = f", {len(json.loads(stdout)['rows'])} rows (one per model x variant x shape)"
        print(
            f"matrix --format {output_format}: median {statistics.median(times):.2f} s, min {min(times):.2f} s, "
            f"max {max(times):.2f} s over {args.runs} runs{extra}"
        )
    verdict = "under" if slowest < args.limit else "OVER"
    print(f"slowest run {slowest:.2f} s: {verdict} the {args.limit:.1f} s limit")
    return 0 if slowest < args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
