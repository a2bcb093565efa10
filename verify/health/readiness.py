"""Check 1, readiness: ``/health`` polled with backoff until it answers 200 or ``--wait`` has passed.

Connection refused, timeouts, 503, 429 and other 5xx mean "not ready yet" (a cold Cloud Run instance
or a TPU VM still loading the model); 401/403 stop at once, since waiting cannot fix a credential, and
so do a 404 (not a vLLM server), a name that does not resolve and a failed TLS handshake.

Why tenacity: the loop is a retry policy (exponential backoff, a deadline, a hook per wait) and a
well-kept library states it in one expression; ``clock`` and ``sleep`` are injected so tests wait
in virtual time. Every wait is bounded by ``--wait``: each poll gets at most the time left (and
``poll_timeout_s``), each pause at most the time left, so ``--wait 10`` against a server that
accepts connections and never answers ends after about 10 s, not after one 30 s poll.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx
import tenacity

from verify import streaming
from verify.auth import AuthError
from verify.health.diagnosis import (
    NOT_A_VLLM_SERVER,
    NotReady,
    fatal_transport_problem,
    status_got,
    status_not_ready,
    transport_not_ready,
)
from verify.health.report import (
    CheckName,
    CheckOptions,
    CheckResult,
    CheckStatus,
    ProgressCallback,
    Waiting,
    result,
    unauthorised,
)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

# The least time one poll gets, even when --wait is (nearly) used up: --wait 0 still looks once.
MIN_POLL_S = 1.0
HEALTH_PATH = "/health"


async def check_readiness(
    client: httpx.AsyncClient,
    options: CheckOptions,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = asyncio.sleep,
    on_waiting: ProgressCallback | None = None,
) -> CheckResult:
    """Poll ``/health`` until it answers 200 or ``options.wait_s`` has passed."""
    name = CheckName.READINESS
    start = clock()
    deadline = start + options.wait_s
    expected = f"200 from /health within {options.wait_s:g} s"
    polls = 0

    async def poll() -> CheckResult | NotReady:
        nonlocal polls
        polls += 1
        budget = min(options.poll_timeout_s, max(deadline - clock(), MIN_POLL_S))
        try:
            async with asyncio.timeout(budget):
                response = await client.get(HEALTH_PATH, timeout=_poll_timeout(client, budget))
        except AuthError as exc:
            return unauthorised(name, clock() - start, expected, "no credential", str(exc))
        except TimeoutError:
            failure = streaming.StreamFailure(streaming.FailureKind.DEADLINE_EXCEEDED, f"no answer in {budget:g} s")
            return transport_not_ready(failure)
        except httpx.HTTPError as exc:
            fatal = fatal_transport_problem(exc)
            if fatal is not None:
                got, cause = fatal
                return result(
                    name, CheckStatus.UNREACHABLE, clock() - start, got, expected=expected, got=got, cause=cause
                )
            return transport_not_ready(streaming.classify_transport_error(exc))
        return _judge(response, polls, clock() - start, expected, options)

    def report_wait(state: tenacity.RetryCallState) -> None:
        if on_waiting is not None:
            on_waiting(Waiting(clock() - start, options.wait_s, _not_ready(state).short))

    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_result(lambda outcome: isinstance(outcome, NotReady)),
        stop=lambda _state: clock() >= deadline,
        wait=_until(deadline, clock, _backoff(options)),
        sleep=sleep,
        before_sleep=report_wait,
        retry_error_callback=lambda state: _gave_up(_not_ready(state), clock() - start, polls, expected),
    )
    outcome: CheckResult = await retrying(poll)
    return outcome


def _judge(
    response: httpx.Response, polls: int, took: float, expected: str, options: CheckOptions
) -> CheckResult | NotReady:
    """What one answer of /health means: ready, never going to be, or not yet."""
    name = CheckName.READINESS
    status = response.status_code
    if status == httpx.codes.OK:
        summary = "ready" if polls == 1 else f"ready after {took:.0f} s ({polls} polls)"
        return result(name, CheckStatus.PASS, took, summary, facts={"polls": polls, "waited_s": round(took, 3)})
    got = status_got(status, response.text)
    if status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        return unauthorised(name, took, expected, got, options.auth_help)
    if status < 500 and status != httpx.codes.TOO_MANY_REQUESTS:
        # A 404 or 400 will not change by waiting: the URL does not point at vLLM's server.
        return result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=NOT_A_VLLM_SERVER)
    return status_not_ready(status, response.text)


def _backoff(options: CheckOptions) -> tenacity.wait.wait_base:
    """first_backoff_s, then x backoff_factor per poll, at most max_backoff_s."""
    return tenacity.wait_exponential(
        multiplier=options.first_backoff_s, exp_base=options.backoff_factor, max=options.max_backoff_s
    )


def _until(
    deadline: float, clock: Clock, backoff: tenacity.wait.wait_base
) -> Callable[[tenacity.RetryCallState], float]:
    """The backoff, but never a pause past the deadline (the last poll happens at the deadline)."""

    def wait(state: tenacity.RetryCallState) -> float:
        return max(0.0, min(backoff(state), deadline - clock()))

    return wait


def _not_ready(state: tenacity.RetryCallState) -> NotReady:
    assert state.outcome is not None  # tenacity calls these hooks only after an attempt
    observed = state.outcome.result()
    assert isinstance(observed, NotReady)  # the retry condition
    return observed


def _gave_up(last: NotReady, waited: float, polls: int, expected: str) -> CheckResult:
    return result(
        CheckName.READINESS,
        CheckStatus.UNREACHABLE,
        waited,
        f"not ready after {waited:.0f} s: {last.short}",
        facts={"polls": polls},
        expected=expected,
        got=f"{last.detail} (last of {polls} polls)",
        cause=last.cause,
    )


def _poll_timeout(client: httpx.AsyncClient, budget_s: float) -> httpx.Timeout:
    configured = client.timeout
    connect = budget_s if configured.connect is None else min(configured.connect, budget_s)
    return httpx.Timeout(budget_s, connect=connect, pool=connect)
