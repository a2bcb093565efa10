"""The exit codes the README promises for a bad stack, from `python -m preview` and from `make preview`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.preview_cli import run_preview, stack_root_with


def test_preview_exits_1_for_a_bad_stack_file_and_2_for_usage(tmp_path: Path) -> None:
    """Scripts branch on these: 1 means the stack file is wrong, 2 that the command was."""
    bad = stack_root_with(tmp_path, "l4", {"gemma-serving:vllm": {"maxNumSeq": 8}})
    assert run_preview("--stack", "l4", root=bad).returncode == 1
    assert run_preview("--stack", "no-such-stack").returncode == 2


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_preview_passes_the_messages_through_and_exits_2() -> None:
    """`make` reports any failed command with its own status 2, as the README says; the messages are ours."""
    result = subprocess.run(
        ["make", "-s", "preview", "STACK=no-such-stack"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "no stack file Pulumi.no-such-stack.yaml; stacks here:" in result.stderr
