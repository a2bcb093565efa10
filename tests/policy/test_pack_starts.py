"""The pack starts the way the Pulumi CLI starts it, from outside the repository.

Guards against a pack that imports fine in pytest (repository root on sys.path) but dies under the CLI,
which runs `python -m pulumi.policy <engine> <pack dir>` with only the pack directory on the path: the
preview would then fail on every pull request.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
from pathlib import Path

PACK_DIR = Path(__file__).resolve().parents[2] / "policy"
STARTUP_TIMEOUT_S = 60.0


def test_pack_serves_its_analyzer_port(tmp_path: Path) -> None:
    """The pack's first stdout line is the analyzer's port, which is what the CLI waits for."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(PACK_DIR)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=STARTUP_TIMEOUT_S)
        line = process.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            process.kill()
            _, stderr = process.communicate(timeout=10)
            raise AssertionError(f"the pack did not report a port; stdout {line!r}, stderr:\n{stderr[-2000:]}")
        assert 0 < int(line) < 65536
    finally:
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=10)
