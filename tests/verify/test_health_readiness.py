"""Readiness polling: wait through cold starts, give up at the deadline, stop at once on 401/403.

Time is injected: ``FakeTime`` advances a virtual clock on every sleep, so a 15-minute wait takes
milliseconds, while requests still travel over real sockets to a local server.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig, free_port
from verify.client import make_client
from verify.endpoint import AuthKind, Target
from verify.health import CheckName, CheckOptions, CheckStatus, Waiting, check_readiness, run_checks


class FakeTime:
    """A virtual clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def local_target(url: str, model: str | None = "tiny-gemma") -> Target:
    return Target(base_url=url, model=model, auth_kind=AuthKind.NONE, source="url")


async def test_503_and_429_then_ready_waits_with_growing_backoff() -> None:
    """A Cloud Run instance that answers 503 while loading must be waited for, not reported broken."""
    time = FakeTime()
    progress: list[Waiting] = []
    config = FakeVllmConfig(status_sequences={"/health": [503, 503, 429, 503]})
    async with FakeVllm(config) as server, make_client(server.url, None) as client:
        result = await check_readiness(
            client, CheckOptions(wait_s=900), clock=time.clock, sleep=time.sleep, on_waiting=progress.append
        )
    assert result.status is CheckStatus.PASS
    assert result.facts["polls"] == 5
    assert "ready after" in result.summary
    assert time.sleeps == sorted(time.sleeps)
    assert time.sleeps[0] < time.sleeps[-1]
    assert [p.observation.split()[0] for p in progress] == ["503", "503", "429", "503"]


async def test_connection_refused_until_the_server_starts() -> None:
    """A TPU VM whose vLLM has not bound port 8000 yet refuses connections: that is "not ready"."""
    time = FakeTime()
    server = FakeVllm(port=free_port())

    async def sleep_then_start(seconds: float) -> None:
        await time.sleep(seconds)
        if len(time.sleeps) == 2:
            await server.start()

    try:
        async with make_client(server.url, None) as client:
            result = await check_readiness(client, CheckOptions(wait_s=900), clock=time.clock, sleep=sleep_then_start)
    finally:
        await server.stop()
    assert result.status is CheckStatus.PASS
    assert result.facts["polls"] == 3


async def test_never_ready_gives_up_at_the_deadline_and_says_why() -> None:
    """A server stuck at 503 must end at --wait with exit 2 and the likely cause (still loading)."""
    time = FakeTime()
    config = FakeVllmConfig(always_status={"/health": 503})
    async with FakeVllm(config) as server, make_client(server.url, None) as client:
        report = await run_checks(
            client, local_target(server.url), CheckOptions(wait_s=120), clock=time.clock, sleep=time.sleep
        )
    readiness = report.checks[0]
    assert readiness.status is CheckStatus.UNREACHABLE
    assert time.now == pytest.approx(120)  # waited exactly --wait, never past it
    assert "503" in (readiness.got or "")
    assert "startup probe" in (readiness.cause or "")
    assert report.exit_code == 2
    assert [check.status for check in report.checks[1:]] == [CheckStatus.SKIPPED] * 5
    assert all("readiness" in check.summary for check in report.checks[1:])


async def test_nothing_listening_is_unreachable_with_the_cause() -> None:
    """A stopped server: exit 2, naming "connection refused" and what usually causes it."""
    time = FakeTime()
    url = f"http://127.0.0.1:{free_port()}"
    async with make_client(url, None) as client:
        result = await check_readiness(client, CheckOptions(wait_s=30), clock=time.clock, sleep=time.sleep)
    assert result.status is CheckStatus.UNREACHABLE
    assert "connection refused" in (result.got or "")
    assert "not started" in (result.cause or "")


@pytest.mark.parametrize("status", [401, 403])
async def test_unauthorised_stops_at_once(status: int) -> None:
    """Waiting cannot fix a credential: 401/403 must end the poll immediately with the auth advice."""
    time = FakeTime()
    async with FakeVllm(FakeVllmConfig(front_door_status=status)) as server, make_client(server.url, None) as client:
        result = await check_readiness(
            client, CheckOptions(wait_s=900, auth_help="grant roles/run.invoker"), clock=time.clock, sleep=time.sleep
        )
    assert result.status is CheckStatus.UNAUTHORISED
    assert time.sleeps == []
    assert str(status) in (result.got or "")
    assert result.cause == "grant roles/run.invoker"


async def test_not_found_health_is_a_wrong_url_not_a_wait() -> None:
    """A 404 on /health means the URL does not point at vLLM; polling for 15 minutes would hide that."""
    time = FakeTime()
    async with (
        FakeVllm(FakeVllmConfig(always_status={"/health": 404})) as server,
        make_client(server.url, None) as client,
    ):
        result = await check_readiness(client, CheckOptions(), clock=time.clock, sleep=time.sleep)
    assert result.status is CheckStatus.FAIL
    assert time.sleeps == []
    assert "base URL" in (result.cause or "")


async def test_unresolvable_host_is_unreachable_at_once() -> None:
    """A deleted service's host name never resolves: waiting would only delay the message."""
    time = FakeTime()

    def no_such_host(request: httpx.Request) -> httpx.Response:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except socket.gaierror as exc:
            raise httpx.ConnectError("[Errno -2] Name or service not known", request=request) from exc

    client = make_client("http://gone.invalid", None, transport=httpx.MockTransport(no_such_host))
    async with client:
        result = await check_readiness(client, CheckOptions(), clock=time.clock, sleep=time.sleep)
    assert result.status is CheckStatus.UNREACHABLE
    assert time.sleeps == []
    assert "DNS" in (result.got or "")


async def test_zero_wait_polls_once() -> None:
    time = FakeTime()
    async with (
        FakeVllm(FakeVllmConfig(always_status={"/health": 503})) as server,
        make_client(server.url, None) as client,
    ):
        result = await check_readiness(client, CheckOptions(wait_s=0), clock=time.clock, sleep=time.sleep)
    assert result.status is CheckStatus.UNREACHABLE
    assert result.facts["polls"] == 1
    assert result.name is CheckName.READINESS


async def test_each_poll_and_pause_fits_in_what_is_left_of_the_wait() -> None:
    """Guards against one 30 s poll (or a 15 s pause) running past --wait 10: each poll's timeout is at
    most the time left (never under a second, so the last look still happens) and no pause overshoots."""
    time = FakeTime()
    budgets: list[float] = []

    def not_ready(request: httpx.Request) -> httpx.Response:
        budgets.append(request.extensions["timeout"]["read"])
        return httpx.Response(503, text="Service Unavailable")

    client = make_client("http://starting.test", None, transport=httpx.MockTransport(not_ready))
    async with client:
        result = await check_readiness(
            client, CheckOptions(wait_s=10, poll_timeout_s=30), clock=time.clock, sleep=time.sleep
        )
    assert result.status is CheckStatus.UNREACHABLE
    assert time.now == pytest.approx(10)
    assert budgets[0] == pytest.approx(10)
    assert all(1.0 <= budget <= 10 for budget in budgets)
    assert budgets == sorted(budgets, reverse=True)
    assert result.facts["polls"] == len(budgets)
