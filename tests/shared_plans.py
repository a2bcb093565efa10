"""Plans rendered once per test run, shared by the run's pytest-xdist workers through files.

Why: each worker is a process of its own, and `render_stack`'s cache is per process, so every worker
rendered the stacks its tests read again (0.1-0.4 s of CPU each, dozens of variants, the GKE ones the
dearest). A plan is a function of the stack file, the overrides, the state and the environment alone (see
`tests.conftest.render_stack`), and nothing edits the sources during a run; the folder is this run's own
(pytest's base temporary folder, which the workers of one run share and the next run does not), so a
plan never outlives the sources it was rendered from. This is pytest-xdist's documented recipe for
session data shared by workers: a file lock, and a file under `getbasetemp().parent`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from preview.capture import Capture


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every process of this test run shares: pytest's base temporary folder, one level above each
    worker's own under pytest-xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class SharedPlans:
    """Pickled captures by key, in files under `folder` once a session sets it (before that, each call renders)."""

    def __init__(self) -> None:
        self.folder: Path | None = None

    def get(self, key: str, render: Callable[[], Capture]) -> bytes:
        """The pickled capture stored under `key`, rendered by whichever process asks first while the others
        wait for it."""
        if self.folder is None:
            return _pickled(render())
        name = hashlib.sha256(key.encode()).hexdigest()
        stored = self.folder / f"{name}.pickle"
        with (self.folder / f"{name}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if stored.exists():
                return stored.read_bytes()
            pickled = _pickled(render())
            partial = stored.with_suffix(".partial")
            partial.write_bytes(pickled)
            partial.replace(stored)
            return pickled


def _pickled(capture: Capture) -> bytes:
    return pickle.dumps(capture, protocol=pickle.HIGHEST_PROTOCOL)
