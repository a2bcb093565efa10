"""The preview started from anywhere: it resolves the project by --root or GEMMA_SERVING_ROOT, never by
the folder it happens to be started in.

One test starts a real interpreter from another folder: whether the program's packages import there is a
property of the process (its `sys.path`). The others check how the command reads --root, the working
folder and the environment, which its `main` does in this process as in a child (tests/preview_cli.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.preview_cli import run_preview


def _preview(*args: str, cwd: Path, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "GEMMA_SERVING_ROOT"} | (environment or {})
    return subprocess.run(
        [sys.executable, "-m", "preview", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_preview_runs_from_outside_the_checkout_with_root(tmp_path: Path) -> None:
    """`<checkout>/.venv/bin/python -m preview --root <checkout> --stack l4` from another folder used to die
    with `No module named 'deploy'`: the program's packages were importable only from the checkout."""
    result = _preview("--root", str(ROOT), "--stack", "l4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gemma-l4-vllm" in result.stdout


def test_a_relative_root_from_docs_works() -> None:
    """The issue's report: `python -m preview --root .. --stack l4` run from docs/."""
    result = run_preview("--root", "..", "--stack", "tpu-v6e", "--format", "json", cwd=ROOT / "docs")
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith("{")


def test_a_folder_without_pulumi_yaml_is_one_usage_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong --root gets one line saying what to pass, not a traceback."""
    monkeypatch.delenv("GEMMA_SERVING_ROOT", raising=False)
    result = run_preview("--root", str(tmp_path), "--stack", "l4", cwd=tmp_path)
    assert result.returncode == 2
    expected = (
        f"error: no Pulumi.yaml in {tmp_path.resolve()} (--root): pass --root <the gemma-serving project folder> "
        "or set GEMMA_SERVING_ROOT"
    )
    assert result.stderr.strip().splitlines() == [expected]


def test_the_environment_names_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GEMMA_SERVING_ROOT is the project for every command started without --root (an MCP client's env)."""
    monkeypatch.setenv("GEMMA_SERVING_ROOT", str(tmp_path))
    result = run_preview("--stack", "l4", cwd=tmp_path)
    assert result.returncode == 2
    assert "(GEMMA_SERVING_ROOT)" in result.stderr
