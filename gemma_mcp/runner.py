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
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# What a failed command's message keeps: the end of stderr, where the CLIs print their one clear line.
STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Completed:
    """What a child process left behind; ``timed_out`` means it was killed at the cap."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False

    def stderr_tail(self) -> str:
        return self.stderr.strip()[-STDERR_TAIL_CHARS:]


class ModuleRunner(Protocol):
    """Runs ``python -m <module> <args>`` in the project root; tests may pass their own."""

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed: ...


@dataclass(frozen=True, slots=True)
class SubprocessRunner:
    """The real runner: the same interpreter as the server, the project root as working directory."""

    root: Path
    env: Mapping[str, str] | None = None

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        environment = dict(os.environ if self.env is None else self.env)
        # The children print tables for a terminal that is not there; keep their output plain.
        environment.setdefault("NO_COLOR", "1")
        process = await asyncio.create_subprocess_exec(
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
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
        except TimeoutError:
            # SIGINT first: verify keeps finished cells and exits 130; then make sure it is gone.
            await _stop(process)
            stdout, stderr = await process.communicate()
            return Completed(process.returncode or -1, _text(stdout), _text(stderr), timed_out=True)
        return Completed(process.returncode or 0, _text(stdout), _text(stderr))


async def _stop(process: asyncio.subprocess.Process, *, grace_s: float = 10.0) -> None:
    import signal  # noqa: PLC0415 - only needed on this path

    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(process.wait(), timeout=grace_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
