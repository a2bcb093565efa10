"""`verify health` against a real vLLM server, when one is named.

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
