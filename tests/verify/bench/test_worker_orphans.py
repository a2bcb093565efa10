"""A bench killed outright leaves no worker process behind, and no traceback.

The MCP server's bench child is killed with SIGKILL when the server dies (its own PR_SET_PDEATHSIG). Its
worker processes used to run on until their next flush of samples to the dead parent, then each printed a
BrokenPipeError traceback into the server's output. Each worker now dies with its parent, at once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Starts the real worker pool (two spawned processes) against a server that accepts and never answers,
# so each worker is busy in its share (awaiting a response, not reading its pipe), prints the workers'
# pids once the measured phase is under way, then waits to be killed.
_PARENT = textwrap.dedent(
    """
    import asyncio, socket
    from verify.bench.workers import ClientSpec, WorkerPool
    from verify.streaming import StreamRequest

    async def main() -> None:
        silent = socket.create_server(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        spec = ClientSpec(base_url=f"http://127.0.0.1:{port}", transport="httpx", connect_timeout_s=5.0,
                          read_timeout_s=120.0, max_users=2)
        request = StreamRequest(model="m", prompt="p", max_tokens=1)
        async with WorkerPool(2, spec) as pool:
            def measuring() -> None:
                print(" ".join(str(process.pid) for process in pool._processes), flush=True)
            await pool.run_phase([], [request, request], 2, headers={}, timeouts=None, on_measuring=measuring)

    asyncio.run(main())
    """
)


def _alive(pid: int) -> bool:
    """Running, not a zombie left for an init that does not reap (as in containers)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_when_the_bench_process_is_killed() -> None:
    """SIGKILL to the bench process (no cleanup can run) must take its workers with it."""
    command = [sys.executable, "-c", _PARENT]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None
            workers = [int(pid) for pid in parent.stdout.readline().split()]
            assert len(workers) == 2
            assert all(_alive(pid) for pid in workers)
            parent.send_signal(signal.SIGKILL)
            # The workers hold the parent's stdout and stderr: the pipes end only when the last of them exits, so
            # a worker that outlives its parent (and would print a traceback at its next flush) times this out.
            try:
                _out, errors = parent.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail("a worker outlived the bench that started it")
            assert not any(_alive(pid) for pid in workers), "a worker outlived the bench that started it"
            assert "Traceback" not in errors
        finally:
            parent.kill()
