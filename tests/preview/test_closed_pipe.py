"""`make preview | head` and `make matrix | head`: the reader leaves early, and the command must end quietly
(exit 141, as `cat` would under SIGPIPE) instead of printing a BrokenPipeError traceback on the user's terminal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from preview.closed_pipe import EXIT_CLOSED_PIPE
from tests.conftest import ROOT


@pytest.mark.parametrize("command", [["preview", "--stack", "l4", "--format", "json"], ["preview.matrix"]])
def test_a_reader_that_leaves_ends_the_command_quietly(command: list[str]) -> None:
    """Before, `python -m preview --stack l4 --format json | head -c 300` ended in a traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write meets a closed pipe
    try:
        result = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.returncode == EXIT_CLOSED_PIPE, result.stderr
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
