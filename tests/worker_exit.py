"""An xdist worker that finished its session ends without tearing the interpreter down.

Why: after a worker's last test, `make test` waited some 3 s more (measured 2026-11-27 on the 2-core machine:
the controller's session ended 2.8 s after the workers' exit handlers had run; with this, 0.15 s after) while
each worker freed every module, plan and syntax tree it held, one object at a time: memory the process was
about to hand back whole. By then every result is on the controller's side: a worker sends its reports, and
that it finished, before its `pytest_unconfigure`.

What still runs: every exit handler (temporary folders removed, multiprocessing's children reaped, logging
flushed): the last one registered runs them all, then ends the process with the status a finished worker
has. A worker that did not reach `unconfigure` (one that crashed) exits the usual way, with its own status;
a run without xdist (`-n 0`, the live tests) is untouched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

import pytest

_RUNNING: set[str] = set()


def _run_exit_handlers_then_end() -> None:
    if _RUNNING:  # called again from the run below
        return
    _RUNNING.add("exit handlers")
    atexit._run_exitfuncs()  # every handler registered before this one, once; then the registry is empty
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a stream already closed holds nothing to flush
            stream.flush()
    os._exit(0)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Registered last, so it runs first, once every test, report and plugin of this worker is done.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        atexit.register(_run_exit_handlers_then_end)
