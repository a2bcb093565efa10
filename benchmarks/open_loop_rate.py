"""Does `verify bench --request-rate` send at the rate it claims, and does it say so when it cannot?

Against benchmarks/scripted_server.py (TTFT and inter-token gap fixed by its arguments: the truth), it
runs two open-loop cells and prints what each reported:

1. the done-when: ``--request-rate 20 --requests 200`` (Poisson) with a per-request SLO: the achieved
   send rate must be within 5% of 20/s, the cell trusted, with goodput, p95 TTFT and their 95%
   confidence intervals printed (exit 1 otherwise);
2. a starved schedule: the same rate with ``--max-in-flight 2`` against a server whose requests take
   longer than two in flight can serve at 20/s: the cell must be marked untrusted (schedule not kept).

Usage: ``python -m benchmarks.open_loop_rate [--rate 20] [--requests 200] [--ttft-ms 50] [--itl-ms 5]``
(about 20 s; binds 127.0.0.1 only). The first cell may also be untrusted for another reason, a CPU-bound
client (verify/bench/trust.py, on a busy machine): that is printed, and only the schedule is judged here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from verify.argtypes import positive_int, positive_number
from verify.bench.open_loop import SCHEDULE_BEHIND
from verify.bench.results import CellRecord, load_results
from verify.cli import main as verify_main

TOLERANCE = 0.05


@contextmanager
def scripted_server(ttft_ms: float, itl_ms: float) -> Iterator[str]:
    """benchmarks/scripted_server.py in a child process; yields its URL."""
    command = [sys.executable, "-m", "benchmarks.scripted_server", "--port", "0", "--workers", "1"]
    command += ["--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield str(json.loads(process.stdout.readline())["url"])
    finally:
        process.terminate()
        process.wait(timeout=10)


def bench(url: str, folder: Path, name: str, extra: Sequence[str]) -> CellRecord:
    output = folder / f"{name}.jsonl"
    argv = ["bench", "--url", url, "--context", "64", "--max-tokens", "16", "--warmup", "4", "--no-progress"]
    verify_main([*argv, "--output", str(output), "--allow-untrusted", *extra])
    return load_results(output).records[0]


def _interval(record: CellRecord, field: str) -> str:
    interval = record.ci.get(field)
    if interval is None:
        minimum = record.too_few_samples.get(field)
        return f"(too few samples: needs {minimum})" if minimum else "(no interval)"
    return f"[{interval[0]:.1f}, {interval[1]:.1f}]"


def _pair(interval: list[float] | None) -> str:
    return "(no interval)" if interval is None else f"[{interval[0]:.3g}, {interval[1]:.3g}]"


def show(title: str, record: CellRecord) -> None:
    print(f"== {title}")
    print(
        f"asked {record.request_rate:g}/s ({record.arrival}), achieved send rate {record.achieved_request_rate:.3f}/s"
    )
    print(f"completed {record.completed}, failed {record.failed}, request throughput {record.request_throughput:.2f}/s")
    print(f"p95 TTFT {record.p95_ttft_ms:.1f} ms, 95% CI {_interval(record, 'p95_ttft_ms')}")
    print(f"p95 E2EL {record.p95_e2el_ms:.1f} ms, 95% CI {_interval(record, 'p95_e2el_ms')}")
    if record.goodput_share is not None:
        print(
            f"goodput ({record.goodput_slo}): {record.goodput_share:.1%} of requests, "
            f"{record.goodput_request_rate:.2f} req/s, 95% CI {_pair(record.goodput_request_rate_ci)}; "
            f"share 95% CI {_pair(record.goodput_share_ci)}"
        )
    print(
        f"schedule: {record.schedule_late_sends} late sends, {record.schedule_capped_sends} held by the cap, "
        f"p95 lateness {record.schedule_p95_lateness_ms:.1f} ms"
    )
    throughput = record.ci.get("request_throughput")
    print(f"request throughput 95% CI {_pair(throughput)}")
    print(f"trusted: {record.trusted}" + (f" ({record.untrusted_reason})" if record.untrusted_reason else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=positive_number("--rate", "requests/s"), default=20.0)
    parser.add_argument("--requests", type=positive_int("--requests"), default=200)
    parser.add_argument("--ttft-ms", type=positive_number("--ttft-ms"), default=200.0)
    parser.add_argument("--itl-ms", type=positive_number("--itl-ms"), default=10.0)
    args = parser.parse_args(argv)
    rate = ["--request-rate", f"{args.rate:g}", "--requests", str(args.requests)]
    slo = [
        "--slo",
        f"p95_ttft_ms={args.ttft_ms * 3:g}",
        "--slo",
        f"p95_e2el_ms={(args.ttft_ms + 16 * args.itl_ms) * 3:g}",
    ]
    problems = []
    with tempfile.TemporaryDirectory() as folder, scripted_server(args.ttft_ms, args.itl_ms) as url:
        kept = bench(url, Path(folder), "kept", [*rate, *slo])
        show(f"{args.rate:g}/s, {args.requests} requests, in-flight cap 256", kept)
        achieved = kept.achieved_request_rate or 0.0
        if abs(achieved - args.rate) > TOLERANCE * args.rate:
            problems.append(f"achieved {achieved:.3f}/s is not within 5% of {args.rate:g}/s")
        if SCHEDULE_BEHIND in (kept.untrusted_reason or ""):
            problems.append("the kept schedule was marked as not kept")
        if kept.goodput_share is None or "p95_ttft_ms" not in kept.ci:
            problems.append("goodput or the p95 TTFT interval is missing")
    # Each request takes TTFT + 16 gaps; two in flight serve at most 2 / that per second, well under the rate.
    slow_ttft = 4 * 1000.0 / args.rate
    with tempfile.TemporaryDirectory() as folder, scripted_server(slow_ttft, args.itl_ms) as url:
        starved = bench(url, Path(folder), "starved", [*rate[:2], "--requests", "60", "--max-in-flight", "2"])
        show(f"starved: {args.rate:g}/s with at most 2 in flight, TTFT {slow_ttft:.0f} ms", starved)
        if starved.trusted:
            problems.append("the starved schedule was not marked untrusted")
    for problem in problems:
        print(f"FAILED: {problem}")
    print("ok" if not problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
