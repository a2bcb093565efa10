"""A child process that must not outlive its parent.

Why: a load generator whose parent was killed (SIGKILL, an MCP server that crashed) would go on sending
requests with no cap left to stop it. On Linux the kernel can send the child SIGKILL when the parent's
thread that started it dies (PR_SET_PDEATHSIG); elsewhere this does nothing, and the caller's own
stop paths (process groups, wall-time caps) remain the guard.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies.

    ``expected_parent``: the parent's pid as the parent knew it; if the parent already died before this
    call (a race the kernel cannot cover), the process exits at once instead of running orphaned.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # noqa: PLC0415 - Linux only, and only in the child

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)
