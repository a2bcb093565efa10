"""Run one of the project's own CLIs as a child process, bounded in time, and keep what it printed.

Why a child process rather than a function call: the stdio transport owns this process's stdout, and
the CLIs print; the offline plan runs Pulumi's mock runtime, which is process-global state; and a
benchmark must be stoppable at its wall-time cap without leaving half-cancelled work in the server.
The argument list is passed as a list, never through a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from verify.processes import die_with_parent
from verify.redact import Redactor

# What a failed command's message keeps: the end of stderr, where the CLIs print their one clear line.
STDERR_TAIL_CHARS = 2000
# After SIGINT at a wall-time cap, how long the child's group has to write what it finished.
STOP_GRACE_S = 5.0
# How long a killed child is waited for (SIGKILL ends it at once; this only bounds a loop that is stopping).
REAP_WAIT_S = 2.0
# Process groups of the children running now: every one is killed when the server exits.
_LIVE_GROUPS: set[int] = set()


@dataclass(frozen=True, slots=True)
class Completed:
    """What a child process left behind; ``timed_out`` means it was stopped at the cap."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False

    def stderr_tail(self, redactor: Redactor) -> str:
        """The end of stderr, scrubbed before it is cut (a cut must never leave half a token unscrubbed)."""
        return redactor.tail(self.stderr, STDERR_TAIL_CHARS)


class ModuleRunner(Protocol):
    """Runs ``python -m <module> <args>`` in the project root; tests may pass their own."""

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed: ...


@dataclass(frozen=True, slots=True)
class SubprocessRunner:
    """The real runner: the same interpreter as the server, the project root as working directory.

    Each child leads a process group of its own (a bench's worker processes join it), and the group is what
    is stopped: SIGINT at the wall-time cap (verify keeps the finished cells), SIGKILL after STOP_GRACE_S;
    SIGKILL at once when the call is cancelled or the client goes away; SIGKILL for every live group when
    the server exits (`kill_all`). On Linux the child is also killed by the kernel if the server dies
    without a chance to clean up (PR_SET_PDEATHSIG).
    """

    root: Path
    env: Mapping[str, str] | None = None
    grace_s: float = STOP_GRACE_S

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        environment = dict(os.environ if self.env is None else self.env)
        # The children print tables for a terminal that is not there; keep their output plain.
        environment.setdefault("NO_COLOR", "1")
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                module,
                *args,
                cwd=self.root,
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        )
        try:
            # Shielded: the child may already run (and send load) before the spawn returns; a call cancelled
            # in that window must still stop it, so the spawn finishes and its group is killed then.
            process = await asyncio.shield(spawn)
        except BaseException:
            spawn.add_done_callback(_kill_spawned)
            raise
        _LIVE_GROUPS.add(process.pid)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
        except TimeoutError:
            await _stop(process, grace_s=self.grace_s)
            stdout, stderr = await process.communicate()
            return Completed(process.returncode or -1, _text(stdout), _text(stderr), timed_out=True)
        except BaseException:
            # Cancelled (the client cancelled or went away) or the server is stopping: no load may outlive it.
            _kill_group(process.pid)
            await _reap(process)
            raise
        finally:
            _LIVE_GROUPS.discard(process.pid)
        return Completed(process.returncode or 0, _text(stdout), _text(stderr))


def _kill_spawned(spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """The child of a call cancelled while it was being started: killed with its group once it exists."""
    if not spawn.cancelled() and spawn.exception() is None:
        _kill_group(spawn.result().pid)


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Collect a child just killed, so no zombie and no unclosed pipe transport outlive the call. Bounded: a
    second cancellation or a loop that is stopping ends the wait, and the kernel reaps the child at exit."""
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(process.wait(), timeout=REAP_WAIT_S)


def kill_all() -> None:
    """SIGKILL every child group still running (the server is exiting)."""
    for group in list(_LIVE_GROUPS):
        _kill_group(group)
    _LIVE_GROUPS.clear()


def live_groups() -> frozenset[int]:
    return frozenset(_LIVE_GROUPS)


def _kill_group(group: int, sig: signal.Signals = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


async def _stop(process: asyncio.subprocess.Process, *, grace_s: float) -> None:
    """SIGINT to the whole group (the bench's workers stop sending at once), SIGKILL if it lingers."""
    _kill_group(process.pid, signal.SIGINT)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), timeout=grace_s)
    _kill_group(process.pid)  # workers that outlived their parent, or a parent that ignored SIGINT


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
