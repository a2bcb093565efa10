"""`python -m policy --help` answers instead of hanging (it used to start the gRPC server and wait forever)."""

from __future__ import annotations

import subprocess
import sys

from policy.__main__ import started_by_a_person
from tests.conftest import ROOT


def test_help_prints_usage_and_exits() -> None:
    """A person asking the pack for help gets how to use it, exit 0, within seconds."""
    result = subprocess.run(
        [sys.executable, "-m", "policy", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0
    assert "usage: pulumi preview --policy-pack policy" in result.stdout


def test_the_cli_still_starts_the_pack() -> None:
    """The CLI passes its engine address and pack directory and reads the port from a pipe: that serves."""
    assert not started_by_a_person(["__main__.py", "127.0.0.1:1", "/pack"], stdout_is_terminal=False)
    assert started_by_a_person(["__main__.py"], stdout_is_terminal=True)
    assert started_by_a_person(["__main__.py", "-h"], stdout_is_terminal=False)
