"""`verify health`, `query` and `metrics` against a real vLLM server (the ``live_server`` fixture).

Skipped unless a server is named (VERIFY_LIVE_URL, optionally VERIFY_LIVE_MODEL) or started by
``make test-live`` (tests/live/fixtures.py). Example, with a CPU vLLM serving tiny-gemma already:

    VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma \\
        .venv/bin/python -m pytest tests/verify/test_live.py -q -n 0
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.server import RunningServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.live


def run_command(server: RunningServer, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m verify <command> --url ... [--model ...] <extra>`` against the live server."""
    model = ["--model", server.model] if server.model else []
    return subprocess.run(
        [sys.executable, "-m", "verify", command, "--url", server.base_url, *model, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run_verify(server: RunningServer, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_command(server, "health", "--wait", "60", *extra)


def test_live_server_passes_every_check(live_server: RunningServer) -> None:
    """The real server must pass all six checks with real vLLM answers (version, usage, metrics)."""
    run = run_verify(live_server, "--json")
    document = json.loads(run.stdout)
    failed = [check for check in document["checks"] if check["status"] != "pass"]
    assert run.returncode == 0, json.dumps(failed, indent=2)
    assert document["vllm_version"]
    stream = next(check for check in document["checks"] if check["name"] == "chat-stream")
    assert stream["facts"]["ttft_ms"] > 0
    assert stream["facts"]["output_tokens"] >= 1
    metrics = next(check for check in document["checks"] if check["name"] == "metrics")
    assert metrics["facts"]["running"] is not None
    if live_server.model:
        assert document["target"]["model"] == live_server.model


def test_live_server_wrong_model_fails_with_exit_1(live_server: RunningServer) -> None:
    """Against the real server, a name it does not serve must fail the models check (exit 1)."""
    run = run_command(RunningServer(live_server.base_url, "no-such-model"), "health", "--wait", "60")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "'no-such-model' not served" in run.stdout


def test_live_table_output(live_server: RunningServer) -> None:
    """The human-readable table must say every check passed against real vLLM."""
    run = run_verify(live_server)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 6 checks passed" in run.stdout


def test_live_query_streams_an_answer_with_ttft_tokens_per_second_and_usage(live_server: RunningServer) -> None:
    """The done-when, against real vLLM: an answer, then TTFT, tokens/s and usage."""
    run = run_command(live_server, "query", "hello", "--max-tokens", "16")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "TTFT " in run.stdout
    assert "output tok/s" in run.stdout
    assert "usage: prompt " in run.stdout
    document = json.loads(run_command(live_server, "query", "hello", "--max-tokens", "16", "--json").stdout)
    assert document["completion_tokens"] == 16
    assert document["finish_reason"] == "length"
    assert document["ttft_ms"] > 0
    assert document["answer"]
    if live_server.model:
        assert document["served_model"] == live_server.model


def test_live_metrics_prints_the_histogram_means(live_server: RunningServer) -> None:
    """After a request, the server's own TTFT/ITL/E2E histograms must have observations and means."""
    assert run_command(live_server, "query", "warm up", "--max-tokens", "8").returncode == 0
    run = run_command(live_server, "metrics")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "time to first token" in run.stdout
    document = json.loads(run_command(live_server, "metrics", "--json", "--window", "1").stdout)
    assert document["window"]["kind"] == "window"
    totals = json.loads(run_command(live_server, "metrics", "--json").stdout)
    for name in ("ttft", "itl", "e2e", "queue"):
        assert totals["latency"][name]["count"] >= 1
        assert totals["latency"][name]["mean_ms"] is not None


def test_live_quality_gate_reports_each_check_and_fails_closed(live_server: RunningServer) -> None:
    """The quality gate's plumbing against real vLLM: every check runs and names what it saw. The tiny random
    model answers gibberish, so the gate must fail (exit 1) rather than pass on answers it cannot judge."""
    run = run_verify(live_server, "--json", "--quality", "--needle-tokens", "512")
    document = json.loads(run.stdout)
    assert run.returncode == 1, run.stdout + run.stderr
    assert all(check["status"] == "pass" for check in document["checks"])
    assert [check["name"] for check in document["quality"]] == ["arithmetic", "json-format", "needle"]
    assert all(check["saw"] for check in document["quality"])
    assert not any(check["passed"] for check in document["quality"])
