"""`python -m preview` as users run it: a child process, its exit code, stdout and stderr.

A shipped stack's plan is run once per test session and shared by the tests that only read it: the plan
of an unchanged stack file is deterministic (no clock, no network, no state), and each run costs a fresh
interpreter and a whole render (~1.5 s). Tests that change a stack file, or need another root, still run
the command themselves.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
import yaml

from tests.conftest import ROOT

# The tests that read shipped_plan run on one pytest-xdist worker (`--dist loadgroup`, as `make test` runs),
# so each plan is run once per session rather than once per worker.
SHARES_SHIPPED_PLANS = pytest.mark.xdist_group("shipped-plans")


def run_preview(*args: str, root: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "preview", *args]
    if root is not None:
        command += ["--root", str(root)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


@functools.cache
def shipped_plan(stack: str, plan_format: Literal["text", "json"] = "text") -> subprocess.CompletedProcess[str]:
    """`python -m preview --stack <stack> [--format json]` of a stack file as shipped; read it, never change it."""
    return run_preview("--stack", stack) if plan_format == "text" else run_preview("--stack", stack, "--format", "json")


def stack_root_with(tmp_path: Path, stack: str, edit: dict[str, object]) -> Path:
    """A copy of the project with one stack file changed."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    document["config"].update(edit)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path
