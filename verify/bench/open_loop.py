"""An open-loop cell: requests sent on a schedule (verify.bench.arrivals), whatever the server does.

Why a schedule and not users: see verify/bench/arrivals.py. What can go wrong is the client, not the
server, missing the schedule, and then the cell measures a lower rate than it claims. So every send is
timed against its due instant, and a cell is *untrusted* (as a starved closed-loop cell is, see
verify/bench/trust.py) when its sends fell behind: when more than ``LATE_SHARE`` of them went out more
than ``late_tolerance_s`` after their due instant (10 ms, or a tenth of the mean gap between sends if
that is longer), or when the rate the sends achieved is below ``ACHIEVED_SHARE`` of the rate asked. The
second catches what lateness alone cannot: at a rate whose whole schedule is due within the lateness
tolerance (10^9 req/s: 100 sends due in 0.1 microseconds), every send is "on time" while the client sent
at 2 x 10^5 req/s, and the cell would claim a rate it never saw. A late send has one of two causes, and
the reason names which: the client's own event
loop was busy (more load than one process can send), or the in-flight cap (``--max-in-flight``) was
reached, which turns the open loop into a closed one: the server could not keep up with the rate, and
the queue the cap held back is latency the cell did not measure.

The in-flight cap bounds what a run can do to a server (and to the client's sockets): without it, a
rate the server cannot serve grows the number of open streams without limit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import httpx

from verify.bench.arrivals import Arrivals
from verify.bench.metrics import percentile
from verify.bench.samples import PhaseShare, Sample
from verify.bench.stall import StallMonitor
from verify.bench.trust import Trust
from verify.streaming import Clock, StreamRequest, StreamResult, measure_stream

# A send is late when it leaves more than this after its due instant (or a tenth of the mean gap, if longer).
LATE_FLOOR_S = 0.010
LATE_SHARE_OF_GAP = 0.1
# A cell whose late sends are more than this share of all sends did not keep its schedule.
LATE_SHARE = 0.05
# Nor did one whose sends achieved less than this share of the rate asked (the schedule's mean rate is exactly
# the one asked, verify/bench/arrivals.py, so a kept schedule achieves it within its lateness).
ACHIEVED_SHARE = 0.9
DEFAULT_MAX_IN_FLIGHT = 256
SCHEDULE_BEHIND = "schedule not kept"
# In a reason: the sends were held back by the in-flight cap, i.e. by the server (not by the client's CPU).
HELD_BY_CAP = "in-flight cap"


def late_tolerance_s(rate: float) -> float:
    return max(LATE_FLOOR_S, LATE_SHARE_OF_GAP / rate)


@dataclass(frozen=True, slots=True)
class ScheduleSummary:
    """How well the sends kept their schedule."""

    rate: float
    sends: int
    late: int
    capped: int  # sends that waited for the in-flight cap
    max_in_flight: int
    p95_lateness_ms: float
    max_lateness_ms: float
    achieved_rate: float | None  # sends per second between the first and the last send
    tolerance_ms: float

    def as_fields(self) -> dict[str, object]:
        return {
            "achieved_request_rate": self.achieved_rate,
            "schedule_late_sends": self.late,
            "schedule_capped_sends": self.capped,
            "schedule_p95_lateness_ms": self.p95_lateness_ms,
            "schedule_max_lateness_ms": self.max_lateness_ms,
        }


def schedule_trust(summary: ScheduleSummary) -> Trust:
    """Untrusted when more than ``LATE_SHARE`` of the sends were late, or the rate achieved is below
    ``ACHIEVED_SHARE`` of the rate asked; the reason says by how much and why."""
    late = summary.sends > 0 and summary.late > LATE_SHARE * summary.sends
    achieved_rate = summary.achieved_rate
    short = achieved_rate is not None and achieved_rate < ACHIEVED_SHARE * summary.rate
    if not late and not short:
        return Trust(trusted=True)
    achieved = "" if achieved_rate is None else f", achieved {achieved_rate:.3g}/s"
    if summary.capped:
        cause = (
            f"the {HELD_BY_CAP} of {summary.max_in_flight} held back {summary.capped} sends: the server did not keep "
            "up with this rate (the queue the cap held is latency this cell did not measure)"
        )
    else:
        cause = "the client's own loop sent late (CPU-bound)"
    if late:
        what = (
            f"{summary.late} of {summary.sends} sends more than {summary.tolerance_ms:.0f} ms late (p95 "
            f"{summary.p95_lateness_ms:.0f} ms) at {summary.rate:g}/s{achieved}"
        )
    else:
        what = (
            f"the sends achieved {achieved_rate:.3g}/s of the {summary.rate:g}/s asked (below "
            f"{ACHIEVED_SHARE:.0%} of it)"
        )
    return Trust(trusted=False, reason=f"untrusted, {SCHEDULE_BEHIND}: {what}; {cause}")


async def open_loop_phase(
    client: httpx.AsyncClient,
    requests: Sequence[StreamRequest],
    arrivals: Arrivals,
    *,
    max_in_flight: int,
    timeouts: httpx.Timeout | None = None,
    deadline_s: float | None = None,
    clock: Clock = time.perf_counter,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_result: Callable[[StreamResult], None] | None = None,
) -> tuple[PhaseShare, ScheduleSummary]:
    """Send ``requests`` at ``arrivals``' instants, at most ``max_in_flight`` at once; each request's sample,
    the phase's window and how well the schedule was kept."""
    offsets = arrivals.offsets(len(requests))
    slots = asyncio.Semaphore(max_in_flight)
    samples: list[Sample] = []
    lateness: list[float] = []
    sent: list[float] = []
    capped = 0

    async def send(index: int, request: StreamRequest, sent_at: float) -> None:
        try:
            result = await measure_stream(client, request, timeouts=timeouts, deadline_s=deadline_s, clock=clock)
        finally:
            slots.release()
        samples.append(Sample(sent_at, result, index))
        if on_result is not None:
            on_result(result)

    async with StallMonitor() as monitor:
        started = clock()
        try:
            async with asyncio.TaskGroup() as group:
                for index, (request, offset) in enumerate(zip(requests, offsets, strict=True)):
                    due = started + offset
                    wait = due - clock()
                    if wait > 0:
                        await sleep(wait)
                    if slots.locked():
                        capped += 1
                    await slots.acquire()
                    sent_at = clock()
                    lateness.append(max(0.0, sent_at - due))
                    sent.append(sent_at)
                    group.create_task(send(index, request, sent_at))
        finally:
            finished = clock()
    tolerance = late_tolerance_s(arrivals.rate)
    achieved = (len(sent) - 1) / (sent[-1] - sent[0]) if len(sent) > 1 and sent[-1] > sent[0] else None
    summary = ScheduleSummary(
        rate=arrivals.rate,
        sends=len(sent),
        late=sum(1 for late in lateness if late > tolerance),
        capped=capped,
        max_in_flight=max_in_flight,
        p95_lateness_ms=percentile(lateness, 95) * 1000.0,
        max_lateness_ms=max(lateness, default=0.0) * 1000.0,
        achieved_rate=achieved,
        tolerance_ms=tolerance * 1000.0,
    )
    samples.sort(key=lambda sample: sample.sent_at)
    return PhaseShare(started, finished, tuple(samples), monitor.summary(), max_in_flight), summary
