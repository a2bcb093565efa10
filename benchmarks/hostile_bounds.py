"""The bounds issue 23 names, measured: how long the redactor takes on the inputs that made the old one hang,
and how far past its wall-time cap an MCP bench with worker processes runs.

1. Redactor (verify/redact.py, with policy/credentials.py's shapes): two 200 KB adversarial log lines (the
   old quadratic shapes took 38 s on two such lines) and one 5 MB line (cut and marked).
2. The MCP runner's cap (gemma_mcp/runner.py): `python -m verify bench --workers 2` against a local
   vLLM-shaped server (tests/fake_vllm.py) with a run far longer than the cap; prints the elapsed time, the
   exit code and the last line the child printed (the old runner overshot 8 s to 22 s, ending in SIGKILL
   and a BrokenPipe traceback).

Usage::

    python -m benchmarks.hostile_bounds [--cap 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from gemma_mcp.runner import SubprocessRunner
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from verify.redact import Redactor

ROOT = Path(__file__).resolve().parent.parent


def redactor_seconds() -> dict[str, float]:
    redactor = Redactor()
    inputs = {
        "two 200 KB lines (letters; dashed eyJ)": ["a" * 200_000, "eyJ-" * 50_000],
        "one 5 MB line": ["x" * 5_000_000],
    }
    timings: dict[str, float] = {}
    for name, lines in inputs.items():
        started = time.perf_counter()
        for line in lines:
            redactor.text(line)
        timings[name] = round(time.perf_counter() - started, 3)
    return timings


async def bench_cap(cap_s: float) -> dict[str, object]:
    config = FakeVllmConfig(count_prompt_words=True, ttft_s=0.2, pieces=tuple(f" w{i}" for i in range(40)))
    with tempfile.TemporaryDirectory() as folder:
        async with FakeVllm(config) as server:
            args = [
                "bench", "--url", server.url, "--model", "tiny-gemma", "--concurrency", "8", "--context", "64",
                "--max-tokens", "40", "--requests", "256", "--workers", "2", "--no-progress",
                "--output", str(Path(folder) / "run.jsonl"), "--json",
            ]  # fmt: skip
            started = time.monotonic()
            done = await SubprocessRunner(ROOT)("verify", args, timeout_s=cap_s)
            elapsed = time.monotonic() - started
    tail = done.stderr_tail(Redactor()).splitlines()
    return {
        "cap_s": cap_s,
        "elapsed_s": round(elapsed, 1),
        "timed_out": done.timed_out,
        "exit_code": done.exit_code,
        "last_line": tail[-1] if tail else "",
        "traceback": "Traceback" in done.stderr,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cap", type=float, default=8.0, help="the bench's wall-time cap in seconds")
    args = parser.parse_args()
    result = {"redactor_s": redactor_seconds(), "bench_cap": asyncio.run(bench_cap(args.cap))}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
