"""`python -m preview` as users run it: its exit code, stdout and stderr, from the command's own `main`.

In-process, not a child interpreter: what these tests check is what the command prints and the code it
exits with, which `preview.__main__.main` returns; a child paid the Pulumi SDK and provider imports again
(~1.5 s of CPU each). Where the process itself is the point (a reader that leaves the pipe, a start from
another folder, `make`'s exit status) the tests run the command as a child themselves.

A shipped stack's plan is run once per test session and shared by the tests that only read it: the plan
of an unchanged stack file is deterministic (no clock, no network, no state). Tests that change a stack
file, or need another root, run the command themselves.
"""

from __future__ import annotations

import contextlib
import functools
import io
import shutil
import subprocess
from pathlib import Path
from typing import Literal

import pytest
import yaml

from preview.__main__ import main
from tests.conftest import ROOT, _ensure_event_loop

# The tests that read shipped_plan run on one pytest-xdist worker (`--dist loadgroup`, as `make test` runs),
# so each plan is run once per session rather than once per worker.
SHARES_SHIPPED_PLANS = pytest.mark.xdist_group("shipped-plans")


def run_preview(*args: str, root: Path | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python -m preview <args>` run by its `main` in this process, started in `cwd` (by default from the
    repository, as `make` runs it)."""
    argv = [*args, *(["--root", str(root)] if root is not None else [])]
    stdout, stderr = io.StringIO(), io.StringIO()
    # Pulumi's mocks need an event loop; an async test before may have closed this thread's.
    _ensure_event_loop()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["python", "-m", "preview", *argv], code, stdout.getvalue(), stderr.getvalue())


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
