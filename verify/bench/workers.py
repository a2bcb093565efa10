"""Load generation beyond one event loop: a cell's users spread over worker processes.

Why: one Python event loop times every chunk of every stream it reads. Past a few tens of thousands of
chunks per second it falls behind, and what it reports is its own queue, not the server: on a
16-core machine one loop measured TTFT +84% at 256 users and 1,490 ms against a true 215 ms at 2048
users while 14 cores sat idle. So ``verify bench --workers N`` starts N processes once per sweep; for
each cell every worker runs its share of the users closed-loop with its own HTTP client, and sends
its raw samples to the parent, which computes every metric from their union (verify.bench.samples).

Alignment: each worker runs its share of the warm-ups, then waits; when every worker is warm the
parent names one start instant a little in the future and all measured phases begin at it, so no
worker's measured phase overlaps another's warm-up. Each worker watches its own event loop
(verify.bench.stall) during its measured phase; the parent judges the cell's trust from the worst one
(verify.bench.trust).

One worker (the default on a machine with one free CPU, or for few users) runs in the parent's own
event loop through the same ``measure_phase``, so both paths time requests identically.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import httpx

from verify.bench.load_generator import TransportKind, make_transport, raise_fd_limit
from verify.bench.samples import PhaseShare, Sample, split_counts, split_users
from verify.bench.stall import StallMonitor
from verify.client import default_timeout, make_client
from verify.processes import die_with_parent
from verify.streaming import Clock, StreamRequest, StreamResult, measure_stream

# Users one worker process is given before another is started (default --workers). One loop kept
# within 3% of the truth at 16 users and drifted from 64 (docs/benchmarking.md, "Accuracy").
USERS_PER_WORKER = 32
# How far ahead the common start of the measured phase is set, so every worker hears it in time.
START_MARGIN_S = 0.1
# How often a worker sends the samples it has, so the parent's progress bar moves.
FLUSH_INTERVAL_S = 0.25
# Seconds to wait for a worker process to start (imports, client) before giving up.
START_TIMEOUT_S = 60.0

OnResult = Callable[[StreamResult], None]


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under taskset), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_workers(max_users: int, cpus: int) -> int:
    """As many workers as the largest cell needs (one per USERS_PER_WORKER users), bounded by the CPUs."""
    return max(1, min(cpus, math.ceil(max_users / USERS_PER_WORKER)))


async def measure_phase(
    client: httpx.AsyncClient,
    requests: Sequence[StreamRequest],
    users: int,
    *,
    timeouts: httpx.Timeout | None = None,
    deadline_s: float | None = None,
    clock: Clock = time.perf_counter,
    on_result: OnResult | None = None,
    start_at: float | None = None,
    interval_s: float | None = None,
    on_flush: Callable[[list[Sample]], None] | None = None,
) -> PhaseShare:
    """``users`` users each keep one request in flight until ``requests`` are done (closed loop), while
    the event loop's own lateness is watched. ``start_at`` (a ``clock`` instant) delays the start;
    ``on_flush`` receives the new samples every ``interval_s`` seconds and at the end."""
    if start_at is not None:
        await asyncio.sleep(max(start_at - clock(), 0.0))
    pending = iter(enumerate(requests))
    samples: list[Sample] = []
    flushed = 0

    def flush() -> None:
        nonlocal flushed
        if on_flush is not None and flushed < len(samples):
            on_flush(samples[flushed:])
            flushed = len(samples)

    async def user() -> None:
        # One shared iterator: each user takes the next request when its previous one ends.
        for index, request in pending:
            sent_at = clock()
            result = await measure_stream(client, request, timeouts=timeouts, deadline_s=deadline_s, clock=clock)
            samples.append(Sample(sent_at, result, index))
            if on_result is not None:
                on_result(result)

    async def flusher(period: float) -> None:
        while True:
            await asyncio.sleep(period)
            flush()

    async with StallMonitor() as monitor:
        ticker = asyncio.create_task(flusher(interval_s)) if interval_s and on_flush else None
        started = clock()
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(users, len(requests))):
                    group.create_task(user())
        finally:
            finished = clock()
            if ticker is not None:
                ticker.cancel()
    flush()
    return PhaseShare(started, finished, tuple(samples), monitor.summary(), users)


# --- the worker processes --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """What a worker needs to build its own client (everything picklable; no live credentials)."""

    base_url: str
    transport: TransportKind
    connect_timeout_s: float
    read_timeout_s: float
    max_users: int


@dataclass(frozen=True, slots=True)
class PhaseJob:
    """One worker's part of one cell."""

    warmups: tuple[StreamRequest, ...]
    requests: tuple[StreamRequest, ...]
    users: int
    headers: tuple[tuple[str, str], ...]
    timeouts: httpx.Timeout | None
    deadline_s: float | None = None


class WorkerError(RuntimeError):
    """A worker process failed or vanished; the cell cannot be measured."""


def _worker_main(connection: multiprocessing.connection.Connection, spec: ClientSpec, parent: int) -> None:
    """Entry point of a worker process: serve phase jobs until told to stop (``None``).

    It dies with its parent: a bench killed outright (or the MCP server that ran it) leaves no worker
    sending requests with no cap left to stop it.
    """
    die_with_parent(parent)
    try:
        asyncio.run(_serve(connection, spec))
    except KeyboardInterrupt:
        pass  # the parent handles Ctrl-C and stops us
    except Exception:  # noqa: BLE001 - everything goes back to the parent, which raises it
        connection.send(("error", traceback.format_exc()))
    finally:
        connection.close()


async def _serve(connection: multiprocessing.connection.Connection, spec: ClientSpec) -> None:
    raise_fd_limit(spec.max_users)
    # No auth object: the parent sends the credential's current header with every job.
    timeout = default_timeout(connect_s=spec.connect_timeout_s, read_s=spec.read_timeout_s)
    async with make_client(spec.base_url, None, transport=make_transport(spec.transport), timeout=timeout) as client:
        connection.send(("ready",))
        while True:
            job = await asyncio.to_thread(connection.recv)
            if job is None:
                return
            assert isinstance(job, PhaseJob)
            client.headers.update(dict(job.headers))
            if job.warmups:
                await measure_phase(client, job.warmups, job.users, timeouts=job.timeouts, deadline_s=job.deadline_s)
            connection.send(("warm",))
            message = await asyncio.to_thread(connection.recv)
            share = await measure_phase(
                client,
                job.requests,
                job.users,
                timeouts=job.timeouts,
                deadline_s=job.deadline_s,
                start_at=float(message[1]),
                interval_s=FLUSH_INTERVAL_S,
                on_flush=lambda batch: connection.send(("samples", [sample.slim() for sample in batch])),
            )
            connection.send(("done", PhaseShare(share.started_at, share.finished_at, (), share.stalls, share.users)))


class WorkerPool:
    """``async with WorkerPool(n, spec) as pool: shares = await pool.run_phase(...)``.

    Processes are started with ``spawn`` (a clean interpreter: forking a process that runs an event
    loop and a progress-bar thread is unsafe) once per sweep, not per cell.
    """

    def __init__(self, size: int, spec: ClientSpec) -> None:
        if size < 1:
            raise ValueError(f"--workers must be >= 1, got {size}")
        self.size = size
        self._spec = spec
        self._processes: list[multiprocessing.process.BaseProcess] = []
        self._connections: list[multiprocessing.connection.Connection] = []

    async def __aenter__(self) -> Self:
        context = multiprocessing.get_context("spawn")
        for _ in range(self.size):
            parent_end, child_end = context.Pipe()
            process = context.Process(target=_worker_main, args=(child_end, self._spec, os.getpid()), daemon=True)
            process.start()
            child_end.close()
            self._processes.append(process)
            self._connections.append(parent_end)
        await asyncio.gather(*(self._expect(index, "ready", wait_s=START_TIMEOUT_S) for index in range(self.size)))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for connection, process in zip(self._connections, self._processes, strict=True):
            if process.is_alive():
                try:
                    connection.send(None)
                except OSError:
                    process.terminate()
        for process in self._processes:
            await asyncio.to_thread(process.join, 5)
            if process.is_alive():
                process.terminate()
        for connection in self._connections:
            connection.close()

    async def _receive(self, index: int, wait_s: float | None = None) -> tuple[object, ...]:
        connection = self._connections[index]

        def wait() -> tuple[object, ...]:
            if wait_s is not None and not connection.poll(wait_s):
                raise WorkerError(f"worker {index} did not answer within {wait_s:.0f} s")
            try:
                message = connection.recv()
            except EOFError:
                raise WorkerError(f"worker {index} exited unexpectedly") from None
            assert isinstance(message, tuple)
            return message

        message = await asyncio.to_thread(wait)
        if message[0] == "error":
            raise WorkerError(f"worker {index} failed:\n{message[1]}")
        return message

    async def _expect(self, index: int, kind: str, wait_s: float | None = None) -> None:
        message = await self._receive(index, wait_s)
        if message[0] != kind:
            raise WorkerError(f"worker {index} sent {message[0]!r}, expected {kind!r}")

    async def run_phase(
        self,
        warmups: Sequence[StreamRequest],
        requests: Sequence[StreamRequest],
        users: int,
        *,
        headers: dict[str, str],
        timeouts: httpx.Timeout | None,
        deadline_s: float | None = None,
        on_measuring: Callable[[], None] | None = None,
        on_result: OnResult | None = None,
        agree_start: Callable[[], Awaitable[float]] | None = None,
    ) -> list[PhaseShare]:
        """Warm up on every worker, start all measured phases at one instant, return each worker's share.

        ``agree_start`` (once every worker is warm) names that instant on the ``perf_counter`` clock, e.g.
        after other machines' tasks are warm too; by default it is ``START_MARGIN_S`` from now."""
        user_split = split_users(users, self.size)
        warm_split = split_counts(len(warmups), user_split)
        request_split = split_counts(len(requests), user_split)
        jobs = []
        warm_at = request_at = 0
        for share_users, warm_count, request_count in zip(user_split, warm_split, request_split, strict=True):
            jobs.append(
                PhaseJob(
                    warmups=tuple(warmups[warm_at : warm_at + warm_count]),
                    requests=tuple(requests[request_at : request_at + request_count]),
                    users=share_users,
                    headers=tuple(headers.items()),
                    timeouts=timeouts,
                    deadline_s=deadline_s,
                )
            )
            warm_at += warm_count
            request_at += request_count
        active = range(len(jobs))
        for index in active:
            self._connections[index].send(jobs[index])
        await asyncio.gather(*(self._expect(index, "warm") for index in active))
        start_at = await agree_start() if agree_start is not None else time.perf_counter() + START_MARGIN_S
        for index in active:
            self._connections[index].send(("go", start_at))
        if on_measuring is not None:
            on_measuring()
        # Each worker numbers its samples within its slice of the requests; the slices' starts make them the cell's.
        firsts = list(itertools.accumulate(request_split[:-1], initial=0))
        return list(await asyncio.gather(*(self._collect(index, on_result, firsts[index]) for index in active)))

    async def _collect(self, index: int, on_result: OnResult | None, first: int = 0) -> PhaseShare:
        samples: list[Sample] = []
        while True:
            message = await self._receive(index)
            if message[0] == "samples":
                batch = message[1]
                assert isinstance(batch, list)
                samples.extend(
                    dataclasses.replace(sample, index=None if sample.index is None else first + sample.index)
                    for sample in batch
                )
                if on_result is not None:
                    for sample in batch:
                        on_result(sample.result)
            elif message[0] == "done":
                done = message[1]
                assert isinstance(done, PhaseShare)
                return PhaseShare(done.started_at, done.finished_at, tuple(samples), done.stalls, done.users)
            else:
                raise WorkerError(f"worker {index} sent {message[0]!r} while measuring")


async def auth_headers(client: httpx.AsyncClient) -> dict[str, str]:
    """The credential the parent's client would attach now, for the workers to send (refreshed per cell)."""
    auth = client.auth
    if auth is None:
        return {}
    flow = auth.async_auth_flow(client.build_request("GET", "/v1/models"))
    try:
        prepared = await flow.__anext__()
    finally:
        await flow.aclose()
    return {name: value for name, value in prepared.headers.items() if name.lower() in {"authorization"}}


@contextlib.asynccontextmanager
async def worker_pool(requested: int | None, spec: ClientSpec) -> AsyncIterator[WorkerPool | None]:
    """The sweep's worker processes; None when one load generator is enough (it runs in this process)."""
    size = requested if requested is not None else default_workers(spec.max_users, available_cpus())
    if size <= 1:
        yield None
        return
    async with WorkerPool(size, spec) as pool:
        yield pool
