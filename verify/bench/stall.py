"""How long the load generator was kept from running: event-loop stalls, measured while a cell runs.

Why: a latency is the time from sending a request to *noticing* its answer. When the machine running
the benchmark is short of CPU (a laptop, a CI runner, or a small VM that also hosts the server), the
client's process can sleep through its wake-ups for tens or hundreds of milliseconds; every answer
that arrives meanwhile is noticed late, all at once, and its TTFT grows by the stall while the
server's own TTFT does not. This was measured on our 2-core test machine next to the vLLM CPU server:
wake-ups 5 ms apart came back up to 560 ms late, a second process saw the same stalls at the same
moments, and both `verify bench` and `vllm bench serve` reported a third of the real throughput in
those runs. Nothing in the HTTP numbers shows it, so the client watches itself: a probe task sleeps a
short interval again and again and records how late each wake-up is.

The same probe runs as its own process (``python -m verify.bench.stall``, until stdin closes or
SIGTERM) so a comparison with another tool can watch the machine, not one process, with one yardstick;
it imports nothing beyond the standard library so it is watching within a blink of being started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from types import TracebackType

PROBE_INTERVAL_S = 0.005
# Lateness below this is ordinary scheduling jitter, not a stall worth adding up.
STALL_FLOOR_MS = 10.0
# A cell is flagged when its worst stall is above the jitter floor and at least this share of its
# mean TTFT (a 40 ms stall is noise against a 2 s TTFT, and most of a 25 ms one).
STALL_SHARE_OF_TTFT = 0.1
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class StallSummary:
    """Wake-up lateness over one watched period, in milliseconds."""

    max_ms: float
    # Lateness summed over the wake-ups that were later than STALL_FLOOR_MS.
    stalled_ms: float
    probes: int
    # Mean lateness of all wake-ups: the delay a random answer waits to be noticed (a saturated loop's
    # is high all the time, a briefly stalled one's is not).
    mean_ms: float = 0.0

    @classmethod
    def of_lateness(cls, lateness_s: list[float]) -> StallSummary:
        millis = [max(late, 0.0) * 1000.0 for late in lateness_s]
        return cls(
            max_ms=max(millis, default=0.0),
            stalled_ms=sum((late for late in millis if late >= STALL_FLOOR_MS), 0.0),
            probes=len(millis),
            mean_ms=sum(millis) / len(millis) if millis else 0.0,
        )


class StallMonitor:
    """``async with StallMonitor() as monitor: ...``; then ``monitor.summary()``.

    The probe is one more task on the loop being measured, so it sees exactly the delays the
    requests' tasks see; it costs one wake-up per ``interval_s``.
    """

    def __init__(
        self,
        *,
        interval_s: float = PROBE_INTERVAL_S,
        clock: Clock = time.perf_counter,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._sleep = sleep
        self._lateness: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._probed = asyncio.Event()

    async def _probe(self) -> None:
        while True:
            asked_at = self._clock()
            await self._sleep(self._interval_s)
            self._lateness.append(self._clock() - asked_at - self._interval_s)
            self._probed.set()

    async def first_probe(self) -> None:
        """Returns once one wake-up has been timed: from then on a summary has a probe to speak of."""
        await self._probed.wait()

    async def __aenter__(self) -> StallMonitor:
        self._task = asyncio.create_task(self._probe())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                # Our own cancellation of the probe; a cancellation of the caller re-raises below.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    def summary(self) -> StallSummary:
        return StallSummary.of_lateness(self._lateness)


# How every stall warning starts, so a reader that already says the cell is untrusted can leave it out.
STALL_WARNING_START = "the client stalled for up to"


def stall_warning(summary: StallSummary, mean_ttft_ms: float | None) -> str | None:
    """The cell's warning when the client itself stalled enough to move its latencies."""
    if summary.max_ms < STALL_FLOOR_MS:
        return None
    if mean_ttft_ms and summary.max_ms < STALL_SHARE_OF_TTFT * mean_ttft_ms:
        return None
    return (
        f"{STALL_WARNING_START} {summary.max_ms:,.0f} ms ({summary.stalled_ms:,.0f} ms in all): answers then were "
        "timed late (TTFT and E2EL high, TPOT and ITL low)"
    )


# With --ready, printed on stderr once the probe has timed its first wake-up: a caller that must not close stdin
# before the watch has begun (a test, a script timing a short phase) waits for this line instead of guessing a
# start-up time, and the summary it then gets counts at least one probe.
READY_LINE = "stall watch: probing"


async def _watch_until_stdin_closes(*, announce: bool = False) -> StallSummary:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    stdin = sys.stdin.fileno()

    def on_stdin() -> None:
        if not os.read(stdin, 4096):
            stop.set()

    # stdin may be a regular file (e.g. /dev/null), which epoll cannot watch: then signals stop us.
    with contextlib.suppress(PermissionError):
        loop.add_reader(stdin, on_stdin)
    async with StallMonitor() as monitor:
        if announce:
            await monitor.first_probe()
            print(READY_LINE, file=sys.stderr, flush=True)
        await stop.wait()
    loop.remove_reader(stdin)
    return monitor.summary()


def main(argv: list[str] | None = None) -> int:
    """Watch this machine until stdin closes (or SIGTERM); print the summary as one JSON line."""
    parser = argparse.ArgumentParser(
        prog="python -m verify.bench.stall",
        description="Watch this machine's event-loop stalls until stdin closes or SIGTERM; print one JSON line.",
    )
    parser.add_argument("--ready", action="store_true", help="say so on stderr once the first probe has run")
    parsed = parser.parse_args(argv)
    summary = asyncio.run(_watch_until_stdin_closes(announce=parsed.ready))
    print(json.dumps(asdict(summary)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
