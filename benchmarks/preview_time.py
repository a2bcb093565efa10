"""How long each stack's offline plan takes, measured in the same run, and the TPU/GPU ratio.

The TPU stack's plan used to take about twice a GPU stack's: its network edge imported
`pulumi_gcp.compute`, the provider SDK's largest module (components/tpu/compute.py explains the fix).
This measures what a user waits for: `python -m preview --stack <stack>` as a fresh process, the
import of the program included. Stacks run interleaved (round 1: l4, rtx6000, tpu-v6e; round 2 the
same...) so that a machine growing busier during the run slows every stack alike, and the median of
the rounds is reported.

Prints one line per stack (median, min, max of the wall times), then the TPU stack's median over the
GPU stacks' median. With ``--max-ratio`` it exits 1 when that ratio is above it.

Usage::

    python -m benchmarks.preview_time [--runs 7] [--max-ratio 1.3] [--json out.json]
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
GPU_STACKS = ("l4", "rtx6000")
TPU_STACKS = ("tpu-v6e",)


def time_preview(stack: str, output_format: str) -> float:
    """Wall seconds of one `python -m preview` run (a fresh interpreter, as a user or CI runs it)."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "preview", "--stack", stack, "--format", output_format],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"preview of {stack} failed ({result.returncode}):\n{result.stderr}")
    return elapsed


def measure(stacks: tuple[str, ...], runs: int, output_format: str) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {stack: [] for stack in stacks}
    time_preview(stacks[0], output_format)  # warm the file cache and bytecode once, unmeasured
    for _ in range(runs):
        for stack in stacks:
            times[stack].append(time_preview(stack, output_format))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preview_time", description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="rounds over all stacks (default 7)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the plan format timed")
    parser.add_argument("--max-ratio", type=float, default=None, help="exit 1 when TPU/GPU exceeds it")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    stacks = (*GPU_STACKS, *TPU_STACKS)
    times = measure(stacks, args.runs, args.format)
    medians = {stack: statistics.median(values) for stack, values in times.items()}
    print(f"offline plan wall time, {args.runs} interleaved runs each (--format {args.format}):")
    for stack, values in times.items():
        print(f"  {stack:<10} median {medians[stack]:.2f} s   min {min(values):.2f} s   max {max(values):.2f} s")
    gpu = statistics.median([medians[stack] for stack in GPU_STACKS])
    tpu = statistics.median([medians[stack] for stack in TPU_STACKS])
    ratio = tpu / gpu
    print(f"TPU/GPU ratio (medians): {ratio:.2f}x (GPU {gpu:.2f} s, TPU {tpu:.2f} s)")
    if args.json is not None:
        document = {"runs": args.runs, "format": args.format, "seconds": times, "medians": medians, "ratio": ratio}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if args.max_ratio is not None and ratio > args.max_ratio:
        print(f"ratio {ratio:.2f}x is above --max-ratio {args.max_ratio}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
