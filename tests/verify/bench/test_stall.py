"""The load generator watching itself: stalls of its own event loop, in-process and as a process."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import pytest

from verify.bench.stall import READY_LINE, STALL_FLOOR_MS, StallMonitor, StallSummary, stall_warning


async def test_a_blocked_event_loop_is_measured() -> None:
    """Guards against a client that was starved of CPU (so timed answers late) reporting clean numbers."""
    async with StallMonitor(interval_s=0.005) as monitor:
        await monitor.first_probe()  # the probe is running
        time.sleep(0.05)  # noqa: ASYNC251 - the loop cannot run: what CPU starvation does to a client
        await asyncio.sleep(0.02)
    summary = monitor.summary()
    assert summary.max_ms >= 45.0
    assert summary.stalled_ms >= 45.0
    assert summary.probes >= 2


async def test_lateness_is_computed_from_the_injected_clock() -> None:
    """Guards against the probe's arithmetic (interval subtracted, late wake-ups kept) drifting."""
    now = [0.0]
    # Each sleep of 5 ms "takes" the next of these, i.e. wakes up 0, 15 and 2 ms late.
    takes = iter([0.005, 0.020, 0.007])
    done = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        try:
            now[0] += next(takes)
        except StopIteration:
            done.set()
            await asyncio.Event().wait()  # park the probe until the monitor cancels it
        await asyncio.sleep(0)

    async with StallMonitor(interval_s=0.005, clock=lambda: now[0], sleep=fake_sleep) as monitor:
        await done.wait()
    summary = monitor.summary()
    assert summary.probes == 3
    assert summary.max_ms == pytest.approx(15.0)
    assert summary.stalled_ms == pytest.approx(15.0)  # the 2 ms wake-up is jitter, not a stall


def test_summary_ignores_early_wake_ups_and_sums_only_real_stalls() -> None:
    summary = StallSummary.of_lateness([-0.001, 0.0, 0.004, 0.012, 0.3])
    assert summary.max_ms == pytest.approx(300.0)
    assert summary.stalled_ms == pytest.approx(312.0)
    assert summary.probes == 5
    assert StallSummary.of_lateness([]) == StallSummary(0.0, 0.0, 0)


@pytest.mark.parametrize(
    ("max_ms", "mean_ttft_ms", "flagged"),
    [
        (STALL_FLOOR_MS - 1, 5.0, False),  # jitter, however small the TTFT
        (40.0, 2000.0, False),  # noise against a 2 s TTFT
        (40.0, 25.0, True),  # most of a 25 ms TTFT
        (300.0, None, True),  # nothing completed: any real stall is news
        (200.0, 1000.0, True),
    ],
)
def test_a_cell_is_flagged_when_the_stall_could_move_its_latencies(
    max_ms: float, mean_ttft_ms: float | None, flagged: bool
) -> None:
    warning = stall_warning(StallSummary(max_ms, max_ms, 10), mean_ttft_ms)
    assert (warning is not None) == flagged
    if warning is not None:
        assert f"up to {max_ms:.0f} ms" in warning
        assert "timed late" in warning


def _watcher() -> subprocess.Popen[str]:
    """A watcher that has timed its first probe (it says so on stderr with --ready), however slow the machine."""
    watcher = subprocess.Popen(
        [sys.executable, "-m", "verify.bench.stall", "--ready"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stderr is not None
    assert watcher.stderr.readline().strip() == READY_LINE
    return watcher


def test_the_process_watcher_reports_when_stdin_closes() -> None:
    """Guards against a comparison script hanging on, or losing, the machine's stall record."""
    watcher = _watcher()
    out, _ = watcher.communicate(timeout=30)
    assert watcher.returncode == 0
    summary = json.loads(out)
    assert summary["probes"] > 0
    assert summary["max_ms"] >= 0.0


def test_the_process_watcher_reports_on_sigterm() -> None:
    watcher = _watcher()  # probing, so the handler is installed
    watcher.send_signal(signal.SIGTERM)
    out, _ = watcher.communicate(timeout=30)
    assert watcher.returncode == 0
    assert json.loads(out)["probes"] > 0
