"""`verify health`, `query` and `metrics` against a real vLLM server, when one is named.

Skipped unless VERIFY_LIVE_URL is set (optionally VERIFY_LIVE_MODEL, the served name; without it the
checks discover the one model the server lists). Example, with a local CPU vLLM serving tiny-gemma:

    VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma \\
        .venv/bin/python -m pytest tests/verify/test_live.py -q
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
    pytest.mark.skipif(not LIVE_URL, reason="set VERIFY_LIVE_URL to run verify health against a real server"),
]


def run_verify(*extra: str) -> subprocess.CompletedProcess[str]:
    assert LIVE_URL is not None
    model = ["--model", LIVE_MODEL] if LIVE_MODEL else []
    return subprocess.run(
        [sys.executable, "-m", "verify", "health", "--url", LIVE_URL, *model, "--wait", "60", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_live_server_passes_every_check() -> None:
    """The real server must pass all six checks with real vLLM answers (version, usage, metrics)."""
    run = run_verify("--json")
    document = json.loads(run.stdout)
    failed = [check for check in document["checks"] if check["status"] != "pass"]
    assert run.returncode == 0, json.dumps(failed, indent=2)
    assert document["vllm_version"]
    stream = next(check for check in document["checks"] if check["name"] == "chat-stream")
    assert stream["facts"]["ttft_ms"] > 0
    assert stream["facts"]["output_tokens"] >= 1
    metrics = next(check for check in document["checks"] if check["name"] == "metrics")
    assert metrics["facts"]["running"] is not None
    if LIVE_MODEL:
        assert document["target"]["model"] == LIVE_MODEL


def test_live_server_wrong_model_fails_with_exit_1() -> None:
    """Against the real server, a name it does not serve must fail the models check (exit 1)."""
    assert LIVE_URL is not None
    run = subprocess.run(
        [sys.executable, "-m", "verify", "health", "--url", LIVE_URL, "--model", "no-such-model", "--wait", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "'no-such-model' not served" in run.stdout


def test_live_table_output() -> None:
    run = run_verify()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 6 checks passed" in run.stdout


def run_command(command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m verify <command> --url ... [--model ...] <extra>`` against the live server."""
    assert LIVE_URL is not None
    model = ["--model", LIVE_MODEL] if LIVE_MODEL else []
    return subprocess.run(
        [sys.executable, "-m", "verify", command, "--url", LIVE_URL, *model, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_live_query_streams_an_answer_with_ttft_tokens_per_second_and_usage() -> None:
    """The done-when, against real vLLM: an answer, then TTFT, tokens/s and usage."""
    run = run_command("query", "hello", "--max-tokens", "16")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "TTFT " in run.stdout
    assert "output tok/s" in run.stdout
    assert "usage: prompt " in run.stdout
    document = json.loads(run_command("query", "hello", "--max-tokens", "16", "--json").stdout)
    assert document["completion_tokens"] == 16
    assert document["finish_reason"] == "length"
    assert document["ttft_ms"] > 0
    assert document["answer"]
    if LIVE_MODEL:
        assert document["served_model"] == LIVE_MODEL


def test_live_metrics_prints_the_histogram_means() -> None:
    """After a request, the server's own TTFT/ITL/E2E histograms must have observations and means."""
    assert run_command("query", "warm up", "--max-tokens", "8").returncode == 0
    run = run_command("metrics")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "time to first token" in run.stdout
    document = json.loads(run_command("metrics", "--json", "--window", "1").stdout)
    assert document["window"]["kind"] == "window"
    totals = json.loads(run_command("metrics", "--json").stdout)
    for name in ("ttft", "itl", "e2e", "queue"):
        assert totals["latency"][name]["count"] >= 1
        assert totals["latency"][name]["mean_ms"] is not None
