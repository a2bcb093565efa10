"""`verify query` and `verify metrics` against a real vLLM server, when one is named.

Skipped unless VERIFY_LIVE_URL is set (VERIFY_LIVE_MODEL: the served name). With the CPU vLLM serving tiny-gemma:

    VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma \\
        .venv/bin/python -m pytest tests/verify/test_live_query_metrics.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LIVE_URL = os.environ.get("VERIFY_LIVE_URL")
LIVE_MODEL = os.environ.get("VERIFY_LIVE_MODEL")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not LIVE_URL, reason="set VERIFY_LIVE_URL to run verify query/metrics against a real server"),
]


def run_verify(*argv: str) -> subprocess.CompletedProcess[str]:
    assert LIVE_URL is not None
    model = ["--model", LIVE_MODEL] if LIVE_MODEL else []
    return subprocess.run(
        [sys.executable, "-m", "verify", argv[0], "--url", LIVE_URL, *model, *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_live_query_streams_an_answer_with_ttft_tokens_per_second_and_usage() -> None:
    """The done-when, against real vLLM: an answer, then TTFT, tokens/s and usage."""
    run = run_verify("query", "hello", "--max-tokens", "16")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "TTFT " in run.stdout
    assert "output tok/s" in run.stdout
    assert "usage: prompt " in run.stdout
    document = json.loads(run_verify("query", "hello", "--max-tokens", "16", "--json").stdout)
    assert document["completion_tokens"] == 16
    assert document["finish_reason"] == "length"
    assert document["ttft_ms"] > 0
    assert document["answer"]
    if LIVE_MODEL:
        assert document["served_model"] == LIVE_MODEL


def test_live_metrics_prints_the_histogram_means() -> None:
    """After a request, the server's own TTFT/ITL/E2E histograms must have observations and means."""
    assert run_verify("query", "warm up", "--max-tokens", "8").returncode == 0
    run = run_verify("metrics")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "time to first token" in run.stdout
    document = json.loads(run_verify("metrics", "--json", "--window", "1").stdout)
    assert document["window"]["kind"] == "window"
    totals = json.loads(run_verify("metrics", "--json").stdout)
    for name in ("ttft", "itl", "e2e", "queue"):
        assert totals["latency"][name]["count"] >= 1
        assert totals["latency"][name]["mean_ms"] is not None
