"""Workloads beyond what one `bench` run takes are usage errors (exit 2) naming the flag, before any request.

Red team (issue 46): `--request-rate 0.000001` waited for days, `--concurrency 10000000` hung and
`--context 500000000` built a prompt until MemoryError. Every case below points at a closed port: a refusal
must come before the endpoint is even reached, and none may start building prompts or sleeping.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from verify.bench.bounds import MAX_CONCURRENCY, MAX_REQUEST_RATE, max_context_tokens, workload_problems
from verify.bench.max_rate import SearchRule
from verify.bench.options import Workload
from verify.cli import main

NOWHERE = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--no-progress"]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--request-rate", "0.000001"], "--request-rate 1e-06"),
        (["--concurrency", "10000000"], "--concurrency 10000000"),
        (["--context", "500000000"], "--context 500000000"),
        (["--max-tokens", "500000000"], "--max-tokens 500000000"),
        (["--request-rate", "1000000000"], "--request-rate 1e+09"),
        (["--request-rate", "5", "--max-in-flight", "10000000"], "--max-in-flight 10000000"),
        (["--requests", "1000000000"], "--requests 1000000000"),
        (["--warmup", "1000000000"], "--warmup 1000000000"),
        (["--concurrency", "4096", "--context", "131072"], "lower --requests, --context or --concurrency"),
        (["--scenario", "shared-prefix", "--shared-prefixes", "1000000000", "--context", "512"], "--shared-prefixes"),
        (["--find-max-rate", "--slo", "p95_ttft_ms=100", "--context", "64", "--rate-max", "1e9"], "--rate-max 1e+09"),
        (["--find-max-rate", "--slo", "p95_ttft_ms=100", "--context", "64", "--rate-start", "1e-6"], "--rate-start"),
    ],
)
def test_a_workload_beyond_the_bounds_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    """Each refused at once with exit 2, the flag and its bound named, nothing sent and no traceback."""
    started = time.monotonic()
    code = main([*NOWHERE, *flags, "--output", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert named in err
    assert "Traceback" not in err
    assert time.monotonic() - started < 5
    assert not (tmp_path / "r.jsonl").exists()


def test_the_bounds_leave_real_sweeps_alone() -> None:
    """The bounds must not catch what people run: the defaults, 2048 users, a 128K context at a few users, an
    open loop of a day at the slowest, the highest rate and in-flight cap allowed."""
    longest = max_context_tokens()
    assert longest == 262_144  # Gemma 4 12B, 26B-A4B and 31B (serving/catalog/)
    assert workload_problems(Workload()) == []
    assert workload_problems(Workload(concurrency=(1, 64, 2048), context=(128, 1024))) == []
    assert workload_problems(Workload(concurrency=(1, 4), context=(131_072,), max_tokens=1024)) == []
    assert workload_problems(Workload(concurrency=(MAX_CONCURRENCY,), request_rates=(MAX_REQUEST_RATE, 0.01))) == []
    assert workload_problems(Workload(concurrency=(256,), request_rates=(5.0,)), SearchRule(start=1.0)) == []
