"""How long each stack file's offline plan takes, against its budget, measured in the same run.

What a user waits for: `python -m preview --stack <stack>` as a fresh process, the import of the program
included (every `pulumi preview` and `pulumi up` pays the same imports). Budgets (issue 37): 1.0 s for a
shipped stack and for the Cloud Run and TPU examples, 1.5 s for a GKE example (pulumi_kubernetes is
the largest SDK a plan loads), each the median of the runs on a quiet machine.

Stacks run interleaved (round 1: every stack once; round 2 the same...) so that a machine growing busier
during the run slows every stack alike. Each line shows the median, min and max wall time and the median
CPU time (user+sys of the child): on a busy machine the wall time measures the queue for the cores, the
CPU time still measures the plan (though shared cores make it some 20-40 % higher than on a quiet one).
Bytecode is allowed in the children whatever the shell says (PYTHONDONTWRITEBYTECODE): a user's plan
loads the compiled modules.

Also prints the TPU stack's median over the GPU stacks' median (the TPU plan once took twice a GPU
stack's: components/wire/ explains the fix); with ``--max-ratio`` it exits 1 when that ratio
is above it, and with ``--check`` when a stack's median is above its budget.

With ``--baseline REF`` it also times the plans of a git revision (exported to a temporary folder, run
with this checkout's interpreter) interleaved with this checkout's, so a before/after pair is measured on
the same machine in the same minutes: on a shared machine only such pairs compare.

Usage::

    python -m benchmarks.preview_time [--runs 5] [--stacks l4 rtx6000 tpu-v6e] [--check] [--json out.json]
    python -m benchmarks.preview_time --baseline f0a51bc --stacks l4 tpu-v6e gke-l4x4
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
GPU_STACKS = ("l4", "rtx6000")
TPU_STACKS = ("tpu-v6e",)
BUDGET_SECONDS = 1.0
GKE_BUDGET_SECONDS = 1.5


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float


def stack_files(root: Path = ROOT) -> dict[str, Path]:
    """Every stack the repository ships: Pulumi.<stack>.yaml at the root, then the examples."""
    files = [*sorted(root.glob("Pulumi.*.yaml")), *sorted((root / "examples").glob("Pulumi.*.yaml"))]
    return {path.name.removeprefix("Pulumi.").removesuffix(".yaml"): path for path in files}


def budget(path: Path) -> float:
    """A GKE stack (a `<project>:gke` block) has the higher budget: its plan loads pulumi_kubernetes too."""
    config = yaml.safe_load(path.read_text(encoding="utf-8")).get("config") or {}
    return GKE_BUDGET_SECONDS if any(key.endswith(":gke") for key in config) else BUDGET_SECONDS


def time_preview(stack: str, output_format: str, root: Path = ROOT) -> Run:
    """Wall and CPU seconds of one `python -m preview` run (a fresh interpreter, as a user or CI runs it)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "preview", "--stack", stack, "--format", output_format],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env=environment,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"preview of {stack} failed ({result.returncode}):\n{result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall=elapsed, cpu=cpu)


def measure(
    stacks: tuple[str, ...], runs: int, output_format: str, roots: tuple[Path, ...] = (ROOT,)
) -> list[dict[str, list[Run]]]:
    """Each root's runs per stack, interleaved: every stack in every root once per round."""
    times: list[dict[str, list[Run]]] = [{stack: [] for stack in stacks} for _ in roots]
    for root in roots:
        for stack in stacks:
            time_preview(stack, output_format, root)  # warm the file cache and write the bytecode, unmeasured
    for _ in range(runs):
        for stack in stacks:
            for index, root in enumerate(roots):
                times[index][stack].append(time_preview(stack, output_format, root))
    return times


def export_revision(revision: str, into: Path) -> Path:
    """The tree of a git revision of this repository, extracted under `into` (`git archive`)."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision], cwd=ROOT, capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {revision} failed: {archive.stderr.decode(errors='replace').strip()}")
    target = into / "baseline"
    target.mkdir()
    archive_path = into / "baseline.tar"
    archive_path.write_bytes(archive.stdout)
    with tarfile.open(archive_path) as tar:
        tar.extractall(target, filter="data")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preview_time", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="rounds over all stacks (default 5)")
    parser.add_argument("--stacks", nargs="+", default=None, help="stack names (default: every stack file)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the plan format timed")
    parser.add_argument("--check", action="store_true", help="exit 1 when a stack's median is above its budget")
    parser.add_argument("--max-ratio", type=float, default=None, help="exit 1 when TPU/GPU exceeds it")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--baseline", default=None, help="a git revision whose plans are timed interleaved with this checkout's"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    files = stack_files()
    stacks = tuple(args.stacks or files)
    unknown = [stack for stack in stacks if stack not in files]
    if unknown:
        parser.error(f"no stack file for {', '.join(unknown)} (known: {', '.join(files)})")
    if args.baseline is not None:
        with tempfile.TemporaryDirectory(prefix="preview-baseline-") as folder:
            baseline = export_revision(args.baseline, Path(folder))
            before, after = measure(stacks, args.runs, args.format, (baseline, ROOT))
        print_pairs(args.baseline, before, after, args.runs)
        return 0
    (times,) = measure(stacks, args.runs, args.format)
    medians = {stack: statistics.median(run.wall for run in values) for stack, values in times.items()}
    budgets = {stack: budget(files[stack]) for stack in stacks}
    load = os.getloadavg()[0]
    print(f"offline plan time, {args.runs} interleaved runs each (--format {args.format}, load average {load:.1f}):")
    over = []
    for stack, values in times.items():
        walls = [run.wall for run in values]
        cpu = statistics.median(run.cpu for run in values)
        verdict = "ok" if medians[stack] <= budgets[stack] else "OVER"
        if verdict == "OVER":
            over.append(stack)
        print(
            f"  {stack:<22} median {medians[stack]:.2f} s   min {min(walls):.2f} s   max {max(walls):.2f} s"
            f"   cpu {cpu:.2f} s   budget {budgets[stack]:.1f} s {verdict}"
        )
    ratio = None
    if all(stack in medians for stack in (*GPU_STACKS, *TPU_STACKS)):
        gpu = statistics.median([medians[stack] for stack in GPU_STACKS])
        tpu = statistics.median([medians[stack] for stack in TPU_STACKS])
        ratio = tpu / gpu
        print(f"TPU/GPU ratio (medians): {ratio:.2f}x (GPU {gpu:.2f} s, TPU {tpu:.2f} s)")
    if args.json is not None:
        document = {
            "runs": args.runs,
            "format": args.format,
            "loadAverage": load,
            "seconds": {stack: [run.wall for run in values] for stack, values in times.items()},
            "cpuSeconds": {stack: [run.cpu for run in values] for stack, values in times.items()},
            "medians": medians,
            "budgets": budgets,
            "ratio": ratio,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    status = 0
    if args.check and over:
        print(f"above budget: {', '.join(over)}", file=sys.stderr)
        status = 1
    if args.max_ratio is not None and ratio is not None and ratio > args.max_ratio:
        print(f"ratio {ratio:.2f}x is above --max-ratio {args.max_ratio}", file=sys.stderr)
        status = 1
    return status


def print_pairs(revision: str, before: dict[str, list[Run]], after: dict[str, list[Run]], runs: int) -> None:
    print(f"offline plan time, {revision} vs this checkout, {runs} interleaved runs (load {os.getloadavg()[0]:.1f}):")
    for stack in after:
        pairs = [
            f"{label} median {statistics.median(r.wall for r in runs_of[stack]):.2f} s wall "
            f"{statistics.median(r.cpu for r in runs_of[stack]):.2f} s cpu"
            for label, runs_of in (("before", before), ("after", after))
        ]
        print(f"  {stack:<22} {pairs[0]}   {pairs[1]}")


if __name__ == "__main__":
    sys.exit(main())
