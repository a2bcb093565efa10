"""No load outlives its call: a bench's children are stopped with their whole process group at the cap, on
cancel, on disconnect and when the server exits; and one load run at a time per server."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from gemma_mcp import runner as runner_module
from gemma_mcp.runner import Completed, SubprocessRunner, kill_all, live_groups
from tests.gemma_mcp.conftest import ROOT, connect, make_context, text_of

SLEEPER = "tests.gemma_mcp.sleeper"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose: it runs nothing and sends no request.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # Reaped between the signal and the read: /proc/<pid>/stat vanishes (open) or answers ESRCH (read).
        return False


async def _pids(pid_file: Path, timeout_s: float = 20.0) -> tuple[int, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = await asyncio.to_thread(lambda: pid_file.read_text() if pid_file.exists() else "")
        if text.strip():
            parent, child = text.split()
            return int(parent), int(child)
        await asyncio.sleep(0.02)
    raise AssertionError("the sleeper never started")


async def _all_gone(pids: Sequence[int], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_at_the_wall_time_cap_the_whole_group_stops_even_a_worker_that_ignores_sigint(tmp_path: Path) -> None:
    """With worker processes the cap overshot (22 s for 8 s) and workers kept sending: SIGINT went to the
    leader only. Now the group gets SIGINT, and SIGKILL after the grace."""
    pid_file = tmp_path / "pids"
    run = SubprocessRunner(ROOT, grace_s=0.3)
    started = time.monotonic()
    task = asyncio.create_task(run(SLEEPER, [str(pid_file), "--stubborn"], timeout_s=60))
    pids = await _pids(pid_file)
    # The cap is measured from the start; here it is forced right after both processes run.
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _all_gone(pids)
    # And through the timeout path proper:
    pid_file.unlink()
    timed = asyncio.create_task(run(SLEEPER, [str(pid_file), "--stubborn"], timeout_s=3))
    pids = await _pids(pid_file)
    completed = await timed
    assert completed.timed_out
    assert await _all_gone(pids, timeout_s=1.0)
    assert time.monotonic() - started < 20
    assert not live_groups()


async def test_a_cancelled_call_kills_its_child_and_grandchildren(tmp_path: Path) -> None:
    """After a cancelled call the `verify bench` child kept sending requests, re-parented, with no cap."""
    pid_file = tmp_path / "pids"
    task = asyncio.create_task(SubprocessRunner(ROOT)(SLEEPER, [str(pid_file)], timeout_s=60))
    pids = await _pids(pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The direct child is reaped before the call returns: no zombie, no pipe transport left to the collector.
    assert not await asyncio.to_thread(Path(f"/proc/{pids[0]}").exists)
    assert await _all_gone(pids)


async def test_a_call_cancelled_while_its_child_starts_still_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load the child ran (and wrote its pids) before the spawn returned to the runner; a cancel in that
    window left it running, unregistered, with nothing to stop it (a flaky CI failure on a busy machine)."""
    real_spawn = asyncio.create_subprocess_exec

    async def slow_spawn(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await real_spawn(*args, **kwargs)
        await asyncio.sleep(0.5)  # the child runs; the spawn has not returned yet
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", slow_spawn)
    pid_file = tmp_path / "pids"
    task = asyncio.create_task(SubprocessRunner(ROOT)(SLEEPER, [str(pid_file)], timeout_s=60))
    pids = await _pids(pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _all_gone(pids)


async def test_server_exit_kills_every_live_group(tmp_path: Path) -> None:
    """A server that exits (client gone, SIGTERM, crash caught) leaves no child running."""
    pid_file = tmp_path / "pids"
    task = asyncio.create_task(SubprocessRunner(ROOT)(SLEEPER, [str(pid_file)], timeout_s=60))
    pids = await _pids(pid_file)
    assert live_groups()
    kill_all()
    completed = await task
    assert completed.exit_code != 0
    assert await _all_gone(pids)


@dataclasses.dataclass
class SleeperInsteadOfVerify:
    """The real runner, running the sleeper where `verify bench` would run."""

    pid_file: Path

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        return await SubprocessRunner(ROOT)(SLEEPER, [str(self.pid_file)], timeout_s=timeout_s)


async def test_a_client_that_cancels_a_bench_call_stops_the_load(tmp_path: Path) -> None:
    """The MCP client gives up on a bench call (cancel or disconnect): the server kills the child's group."""
    pid_file = tmp_path / "pids"
    ctx = dataclasses.replace(make_context(), run_module=SleeperInsteadOfVerify(pid_file))
    async with connect(ctx) as client:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool("bench", {"url": "http://127.0.0.1:9"})

                group.start_soon(call)
                pids = await _pids(pid_file)
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught
    assert await _all_gone(pids)
    assert not runner_module.live_groups()


class HeldRunner:
    """A bench that runs until the test lets it finish: the second call is made while the first is surely running
    (a fixed sleep raced a loaded machine, where the first could end before the second arrived)."""

    def __init__(self) -> None:
        self.running = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        self.running.set()
        await asyncio.wait_for(self.release.wait(), timeout=30)
        return Completed(1, "[]", "")


async def test_a_second_bench_while_one_runs_is_refused() -> None:
    """Three parallel calls put 384 requests in flight against the 128-user cap; a second is refused now."""
    runner = HeldRunner()
    ctx = dataclasses.replace(make_context(), run_module=runner)
    async with connect(ctx) as client:
        first = asyncio.create_task(client.call_tool("bench", {"url": "http://127.0.0.1:9", "concurrency": [128]}))
        await asyncio.wait_for(runner.running.wait(), timeout=30)
        second = await client.call_tool("bench", {"url": "http://127.0.0.1:9", "concurrency": [128]})
        runner.release.set()
        done = await first
    assert not done.is_error
    assert second.is_error
    assert "only one run that loads an endpoint" in text_of(second)
