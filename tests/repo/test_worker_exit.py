"""The quick end of a finished xdist worker (tests/worker_exit.py) still runs every exit handler, once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A worker's end as the plugin sees it: handlers registered before and after pytest's configure, then its
# unconfigure hook; each handler appends a line to the file named by argv[1].
WORKER = """
import atexit, sys
from tests import worker_exit
log = open(sys.argv[1], "a")
atexit.register(lambda: (log.write("registered at import\\n"), log.flush()))
atexit.register(lambda: (log.write("registered by a plugin\\n"), log.flush()))
worker_exit.pytest_unconfigure(None)
"""


def _end_of_a_worker(tmp_path: Path, *, xdist_worker: bool) -> tuple[int, list[str]]:
    log = tmp_path / "handlers.log"
    environment = {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_WORKER"}
    if xdist_worker:
        environment["PYTEST_XDIST_WORKER"] = "gw0"
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(log)],
        check=False,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        timeout=60,
    )
    return done.returncode, log.read_text().splitlines()


def test_a_finished_worker_still_runs_every_exit_handler_once(tmp_path: Path) -> None:
    """Guards against the quick exit leaving a worker's temporary folders or child processes behind (their
    exit handlers skipped) or running a handler twice."""
    status, ran = _end_of_a_worker(tmp_path, xdist_worker=True)
    assert status == 0
    assert ran == ["registered by a plugin", "registered at import"]


def test_outside_xdist_the_process_ends_the_usual_way(tmp_path: Path) -> None:
    """Guards against `-n 0` runs (the live tests, a developer's single file) ending differently."""
    status, ran = _end_of_a_worker(tmp_path, xdist_worker=False)
    assert status == 0
    assert ran == ["registered by a plugin", "registered at import"]
