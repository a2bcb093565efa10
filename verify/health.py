"""`verify health`: does this endpoint really serve the intended model, and if not, why not.

The checks run in the order a user would debug by hand, each timed, each a ``CheckResult`` (data
first; verify/render.py draws it):

1. readiness: ``/health`` polled with backoff until ``--wait``. Connection refused, timeouts, 503,
   429 and other 5xx mean "not ready yet" (a cold Cloud Run instance or a TPU VM still loading the
   model); 401/403 stop at once, since waiting cannot fix a credential.
2. ``/v1/models`` lists the served name clients will use (else: the names it does serve).
3. ``/version``: the vLLM version, recorded for the report.
4. a chat completion: non-empty text, a ``finish_reason`` and ``usage``.
5. a streamed chat completion, measured by verify/streaming.py (TTFT to the first text chunk,
   output tokens from ``usage``).
6. ``/metrics`` summarised (verify/prom.py).

Decisions:
- Text in ``reasoning`` counts as output for the non-empty test: with a reasoning parser on, a
  model may spend a short ``max_tokens`` budget thinking, which is healthy. Whitespace-only output
  counts as empty: that is what a broken chat template typically produces.
- ``temperature: 0`` and a fixed prompt make the check repeatable; ``ignore_eos`` is never sent,
  because a model that stops at once (EOS as first token) is exactly what this check must catch.
- A check that cannot run because an earlier one failed is reported as skipped, with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import enum
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
import pydantic

from verify import streaming
from verify.auth import AuthError, auth_advice
from verify.client import client_for
from verify.prom import MetricsParseError, parse_metrics
from verify.responses import ChatCompletion, ModelList, VersionInfo, body_excerpt, error_message
from verify.target import Target, add_target_arguments, positive_int, resolve_target

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
Fact = str | int | float | bool | None

DEFAULT_WAIT_S = 900.0  # cold starts load a 12B model from GCS for minutes; a TPU compiles for ~10
DEFAULT_MAX_TOKENS = 32
HEALTH_PROMPT = "Say hello in one short sentence."


class CheckStatus(enum.StrEnum):
    PASS = "pass"  # noqa: S105 - a check outcome, not a password
    FAIL = "fail"  # the endpoint answered, but not as a healthy deployment would (exit 1)
    SKIPPED = "skipped"  # not run because an earlier check failed
    UNREACHABLE = "unreachable"  # never answered, or never became ready within --wait (exit 2)
    UNAUTHORISED = "unauthorised"  # 401/403, or no credential could be obtained (exit 2)


class CheckName(enum.StrEnum):
    READINESS = "readiness"
    MODELS = "models"
    VERSION = "version"
    CHAT = "chat"
    CHAT_STREAM = "chat-stream"
    METRICS = "metrics"


class CheckResult(pydantic.BaseModel):
    """One check's outcome. On failure ``expected``/``got``/``cause`` say what a user needs to act."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: CheckName
    status: CheckStatus
    duration_s: float
    summary: str
    facts: dict[str, Fact] = pydantic.Field(default_factory=dict)
    expected: str | None = None
    got: str | None = None
    cause: str | None = None


class TargetFacts(pydantic.BaseModel):
    """What was checked; never a credential."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    source: str
    auth: str
    model: str | None
    model_discovered: bool
    platform: str | None
    accelerator: str | None


class HealthReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    target: TargetFacts
    vllm_version: str | None
    checks: list[CheckResult]

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 all passed; 2 unreachable or unauthorised (could not check); 1 a check failed."""
        statuses = {check.status for check in self.checks}
        if statuses & {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED}:
            return 2
        if CheckStatus.FAIL in statuses:
            return 1
        return 0

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class HealthOptions:
    wait_s: float = DEFAULT_WAIT_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    prompt: str = HEALTH_PROMPT
    # One /health poll may hang while Cloud Run starts an instance; bound it and poll again.
    poll_timeout_s: float = 30.0
    first_backoff_s: float = 1.0
    max_backoff_s: float = 15.0
    backoff_factor: float = 1.6
    # How to fix a 401/403 for this target (names the API-key variable or the IAM role).
    auth_help: str = "the endpoint requires credentials"


@dataclass(frozen=True)
class Waiting:
    """A readiness poll that did not succeed yet, for progress output."""

    elapsed_s: float
    wait_s: float
    observation: str


ProgressCallback = Callable[[Waiting], None]


# --- the orchestration -------------------------------------------------------------------------------


async def run_health(
    client: httpx.AsyncClient,
    target: Target,
    options: HealthOptions | None = None,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = asyncio.sleep,
    on_waiting: ProgressCallback | None = None,
) -> HealthReport:
    """Run every check in order against ``client`` (which carries the base URL and credential)."""
    opts = options if options is not None else HealthOptions()
    checks: list[CheckResult] = []
    model = target.model  # the name to ask; None when the models check could not confirm one
    version: str | None = None

    checks.append(await check_readiness(client, opts, clock=clock, sleep=sleep, on_waiting=on_waiting))
    if checks[-1].status is CheckStatus.PASS:
        models_result, model = await check_models(client, target, opts, clock=clock)
        checks.append(models_result)
    if not _stopped(checks):
        version_result = await check_version(client, opts, clock=clock)
        checks.append(version_result)
        version = _str_fact(version_result.facts.get("vllm_version"))
    if not _stopped(checks):
        if model is None:
            checks.append(_skipped(CheckName.CHAT, "no served model name to ask (see the models check)"))
        else:
            checks.append(await check_chat(client, model, opts, clock=clock))
    if not _stopped(checks):
        if model is None:
            checks.append(_skipped(CheckName.CHAT_STREAM, "no served model name to ask (see the models check)"))
        else:
            checks.append(await check_chat_stream(client, model, opts, clock=clock))
    if not _stopped(checks):
        checks.append(await check_metrics(client, model, opts, clock=clock))

    done = {check.name for check in checks}
    reason = _stop_reason(checks)
    checks.extend(_skipped(name, reason) for name in CheckName if name not in done)
    facts = TargetFacts(
        base_url=target.base_url,
        source=target.source,
        auth=target.auth_kind.value,
        model=target.model or model,
        model_discovered=target.model is None and model is not None,
        platform=target.platform,
        accelerator=target.accelerator,
    )
    return HealthReport(target=facts, vllm_version=version, checks=checks)


def _stopped(checks: list[CheckResult]) -> bool:
    """After an unreachable or unauthorised answer nothing else can be learnt."""
    return any(check.status in {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED} for check in checks)


def _stop_reason(checks: list[CheckResult]) -> str:
    for check in checks:
        if check.status in {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED}:
            return f"not run: the {check.name.value} check found the endpoint {check.status.value}"
    return "not run"


def _skipped(name: CheckName, reason: str) -> CheckResult:
    return CheckResult(name=name, status=CheckStatus.SKIPPED, duration_s=0.0, summary=reason)


def _str_fact(value: Fact) -> str | None:
    return value if isinstance(value, str) else None


# --- 1. readiness --------------------------------------------------------------------------------------


async def check_readiness(
    client: httpx.AsyncClient,
    options: HealthOptions,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = asyncio.sleep,
    on_waiting: ProgressCallback | None = None,
) -> CheckResult:
    """Poll ``/health`` until it answers 200 or ``options.wait_s`` has passed."""
    name = CheckName.READINESS
    start = clock()
    deadline = start + options.wait_s
    delay = options.first_backoff_s
    polls = 0
    expected = f"200 from /health within {options.wait_s:g} s"
    while True:
        polls += 1
        try:
            response = await client.get("/health", timeout=_poll_timeout(client, options.poll_timeout_s))
        except AuthError as exc:
            return _unauthorised(name, clock() - start, expected, "no credential", str(exc))
        except httpx.HTTPError as exc:
            fatal = _fatal_transport_problem(exc)
            if fatal is not None:
                got, cause = fatal
                return _result(
                    name, CheckStatus.UNREACHABLE, clock() - start, got, expected=expected, got=got, cause=cause
                )
            not_ready = _transport_not_ready(exc)
        else:
            status = response.status_code
            body = response.text
            if status == httpx.codes.OK:
                waited = clock() - start
                summary = "ready" if polls == 1 else f"ready after {waited:.0f} s ({polls} polls)"
                return _result(
                    name, CheckStatus.PASS, waited, summary, facts={"polls": polls, "waited_s": round(waited, 3)}
                )
            got = _status_got(status, body)
            if status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
                return _unauthorised(name, clock() - start, expected, got, options.auth_help)
            if status < 500 and status != httpx.codes.TOO_MANY_REQUESTS:
                # A 404 or 400 will not change by waiting: the URL does not point at vLLM's server.
                cause = (
                    "the base URL does not point at a vLLM OpenAI-compatible server (a path prefix, "
                    "the wrong port, or another service)"
                )
                return _result(name, CheckStatus.FAIL, clock() - start, got, expected=expected, got=got, cause=cause)
            not_ready = _NotReady(f"{status} {httpx.codes.get_reason_phrase(status)}", got, _not_ready_cause(status))
        now = clock()
        if now >= deadline:
            return _result(
                name,
                CheckStatus.UNREACHABLE,
                now - start,
                f"not ready after {now - start:.0f} s: {not_ready.short}",
                facts={"polls": polls},
                expected=expected,
                got=f"{not_ready.detail} (last of {polls} polls)",
                cause=not_ready.cause,
            )
        if on_waiting is not None:
            on_waiting(Waiting(now - start, options.wait_s, not_ready.short))
        await sleep(min(delay, deadline - now))
        delay = min(delay * options.backoff_factor, options.max_backoff_s)


def _poll_timeout(client: httpx.AsyncClient, poll_s: float) -> httpx.Timeout:
    configured = client.timeout
    return httpx.Timeout(poll_s, connect=configured.connect, pool=configured.pool)


def _fatal_transport_problem(exc: httpx.HTTPError) -> tuple[str, str] | None:
    """Errors that waiting cannot fix: the name does not resolve, TLS fails, the scheme is wrong."""
    for cause in _causes(exc):
        text = str(cause)
        if "Name or service not known" in text or "nodename nor servname" in text or _is_dns_error(cause):
            return (
                f"DNS lookup failed: {body_excerpt(text)}",
                "the host name does not resolve: check the URL (a deleted service, or a typo)",
            )
        if isinstance(cause, ssl.SSLError):
            return (
                f"TLS handshake failed: {body_excerpt(text)}",
                (
                    "the server's certificate is not trusted for this host name, or it does not speak TLS "
                    "(try http:// for a local server)"
                ),
            )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return (str(exc), "the URL's scheme is not http or https")
    return None


def _is_dns_error(error: BaseException) -> bool:
    import socket  # noqa: PLC0415 - only needed to name the exception type

    return isinstance(error, socket.gaierror) or type(error).__name__ == "ClientConnectorDNSError"


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


@dataclass(frozen=True)
class _NotReady:
    """One unsuccessful poll: a few words for the table and progress, the detail for "got"."""

    short: str
    detail: str
    cause: str


def _transport_not_ready(exc: httpx.HTTPError) -> _NotReady:
    failure = streaming.classify_transport_error(exc)
    if failure.kind is streaming.FailureKind.CONNECT_ERROR:
        return _NotReady(
            "connection refused",
            f"connection refused or reset ({failure.detail})",
            "nothing accepts connections at this address: the server is not started (a TPU VM still "
            "running its startup script), it crashed while loading, or the URL's host or port is wrong",
        )
    if failure.kind in {streaming.FailureKind.CONNECT_TIMEOUT, streaming.FailureKind.READ_TIMEOUT}:
        return _NotReady(
            "no answer in time",
            f"no answer in time ({failure.detail})",
            "the address does not answer: a firewall dropping packets (TPU: the VPC rule for port 8000), "
            "or an instance too busy to answer /health",
        )
    return _NotReady(
        failure.kind.value.replace("_", " "), failure.detail, "the connection broke while the server was starting"
    )


def _not_ready_cause(status: int) -> str:
    if status == httpx.codes.TOO_MANY_REQUESTS:
        return (
            "no instance can take a request: Cloud Run's max instances is 0 or exhausted, or the GPU "
            "quota of the region leaves no capacity"
        )
    return (
        "the server is starting, restarting or failing its startup probe: the model may still be "
        "loading (minutes for 12B, longer for 31B); raise --wait or read the service's logs"
    )


# --- 2. /v1/models --------------------------------------------------------------------------------


async def check_models(
    client: httpx.AsyncClient, target: Target, options: HealthOptions, *, clock: Clock = time.perf_counter
) -> tuple[CheckResult, str | None]:
    """Whether the expected served name is listed; returns the name later checks should use."""
    name = CheckName.MODELS
    expected_name = target.model
    expected = f"/v1/models lists {expected_name!r}" if expected_name else "/v1/models lists exactly one served model"
    start = clock()
    outcome = await _get_json(
        client, "/v1/models", ModelList, name=name, expected=expected, options=options, start=start, clock=clock
    )
    if isinstance(outcome, CheckResult):
        return outcome, None
    models = outcome
    took = clock() - start
    names = models.names
    served = ", ".join(repr(n) for n in names) or "no models"
    facts: dict[str, Fact] = {"served": ",".join(names)}
    if expected_name is None:
        if len(names) == 1:
            only = names[0]
            facts["max_model_len"] = models.data[0].max_model_len
            summary = f"serves {only!r} (no --model given: using it)"
            return _result(name, CheckStatus.PASS, took, summary, facts=facts), only
        cause = "name the model clients use with --model" if names else "the server loaded no model"
        return _result(
            name, CheckStatus.FAIL, took, f"serves {served}", facts=facts, expected=expected, got=served, cause=cause
        ), None
    card = next((card for card in models.data if card.id == expected_name), None)
    if card is None:
        cause = (
            f"the served name differs from the one clients use, so requests for {expected_name!r} get 404: "
            "vLLM's --served-model-name (the stack's servedModelName) and --model must agree"
        )
        return (
            _result(
                name,
                CheckStatus.FAIL,
                took,
                f"{expected_name!r} not served; serves {served}",
                facts=facts,
                expected=expected,
                got=f"serves {served}",
                cause=cause,
            ),
            None,
        )
    facts["max_model_len"] = card.max_model_len
    summary = f"serves {expected_name!r}" + (f" (max_model_len {card.max_model_len})" if card.max_model_len else "")
    if (
        target.max_model_len is not None
        and card.max_model_len is not None
        and card.max_model_len != target.max_model_len
    ):
        summary += f"; the stack says {target.max_model_len}: an older revision may be serving"
    return _result(name, CheckStatus.PASS, took, summary, facts=facts), expected_name


# --- 3. /version ----------------------------------------------------------------------------------


async def check_version(
    client: httpx.AsyncClient, options: HealthOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.VERSION
    start = clock()
    expected = '200 {"version": ...}'
    outcome = await _get_json(
        client, "/version", VersionInfo, name=name, expected=expected, options=options, start=start, clock=clock
    )
    if isinstance(outcome, CheckResult):
        return outcome
    return _result(
        name, CheckStatus.PASS, clock() - start, f"vLLM {outcome.version}", facts={"vllm_version": outcome.version}
    )


# --- 4. chat completion -----------------------------------------------------------------------------


async def check_chat(
    client: httpx.AsyncClient, model: str, options: HealthOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.CHAT
    expected = "200 with non-empty message text, a finish_reason and usage"
    payload = {
        "model": model,
        "messages": [{"role": "user", "content": options.prompt}],
        "max_tokens": options.max_tokens,
        "temperature": 0,
    }
    start = clock()
    try:
        response = await client.post(streaming.CHAT_PATH, json=payload)
    except AuthError as exc:
        return _unauthorised(name, clock() - start, expected, "no credential", str(exc))
    except httpx.HTTPError as exc:
        return _transport_failure(name, clock() - start, expected, exc)
    took = clock() - start
    if response.status_code != httpx.codes.OK:
        return _status_failure(name, took, expected, response=response, model=model, options=options)
    return _judge_chat(took, expected, response)


def _judge_chat(took: float, expected: str, response: httpx.Response) -> CheckResult:
    """Pass when the answer has visible text (content, or reasoning), a finish_reason and usage."""
    name = CheckName.CHAT
    try:
        answer = ChatCompletion.model_validate_json(response.content)
    except pydantic.ValidationError:
        answer = None
    if answer is None or not answer.choices:
        got = f"200 but not a chat completion with choices: {body_excerpt(response.text)}"
        return _result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=_NOT_OPENAI)
    choice = answer.choices[0]
    content = choice.message.content or ""
    reasoning = choice.message.reasoning_text
    usage = answer.usage
    tokens = usage.completion_tokens if usage is not None else None
    facts: dict[str, Fact] = {
        "finish_reason": choice.finish_reason,
        "completion_tokens": tokens,
        "prompt_tokens": usage.prompt_tokens if usage is not None else None,
        "content_chars": len(content),
        "reasoning_chars": len(reasoning),
    }
    problems = []
    if not (content.strip() or reasoning.strip()):
        problems.append("empty content" if not content else "whitespace-only content")
    if choice.finish_reason is None:
        problems.append("no finish_reason")
    if usage is None:
        problems.append("no usage")
    if problems:
        got = (
            f"{', '.join(problems)}: content={body_excerpt(content, 60)!r}, "
            f"reasoning={body_excerpt(reasoning, 60)!r}, finish_reason={choice.finish_reason}, "
            f"completion_tokens={tokens}"
        )
        cause = _empty_output_cause(choice.finish_reason, tokens)
        return _result(
            name, CheckStatus.FAIL, took, ", ".join(problems), facts=facts, expected=expected, got=got, cause=cause
        )
    shown = content.strip() or reasoning.strip()
    where = "" if content.strip() else " (only in reasoning: raise --max-tokens to see content)"
    summary = f"{body_excerpt(shown, 40)!r}{where}, finish {choice.finish_reason}, {tokens} tokens"
    return _result(name, CheckStatus.PASS, took, summary, facts=facts)


def _empty_output_cause(finish_reason: str | None, tokens: int | None) -> str:
    if finish_reason is None or tokens is None:
        return "the answer lacks OpenAI fields vLLM always sends: a proxy or a non-vLLM server answered"
    if finish_reason == "stop" and tokens <= 1:
        return (
            "the model stopped at once (end-of-sequence first): usually a chat template that does not "
            "match the model, or a wrong tokenizer/checkpoint pairing"
        )
    return (
        "the model generated only special or whitespace tokens: a chat template or tokenizer that does "
        "not match the checkpoint, or a reasoning/tool parser that swallowed the text"
    )


# --- 5. streamed chat completion (measured by verify/streaming.py) -----------------------------------


async def check_chat_stream(
    client: httpx.AsyncClient, model: str, options: HealthOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.CHAT_STREAM
    expected = "an SSE stream with text, a finish_reason, a usage chunk and data: [DONE]"
    request = streaming.StreamRequest(
        model=model, prompt=options.prompt, max_tokens=options.max_tokens, extra_body={"temperature": 0}
    )
    start = clock()
    try:
        result = await streaming.measure_stream(client, request, clock=clock)
    except AuthError as exc:
        return _unauthorised(name, clock() - start, expected, "no credential", str(exc))
    took = clock() - start
    facts: dict[str, Fact] = {
        "ttft_ms": _ms(result.ttft_s),
        "e2el_ms": _ms(result.e2el_s),
        "output_tokens": result.output_tokens,
        "prompt_tokens": result.prompt_tokens,
        "text_chunks": result.content_chunks,
        "finish_reason": result.finish_reason,
        "tokens_per_s": _rate(result.output_tokens, result.e2el_s),
        "decode_tokens_per_s": None if not result.tpot_s else round(1.0 / result.tpot_s, 2),
    }
    failure = result.failure
    if failure is not None:
        if failure.status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
            return _unauthorised(name, took, expected, f"{failure.status}: {failure.detail}", options.auth_help)
        got = f"{failure.kind.value}" + (f" {failure.status}" if failure.status else "") + f": {failure.detail}"
        return _result(
            name,
            CheckStatus.FAIL,
            took,
            f"{failure.kind.value}",
            facts=facts,
            expected=expected,
            got=got,
            cause=_stream_cause(failure, model),
        )
    if not result.text.strip() or result.finish_reason is None or not result.output_tokens:
        got = (
            f"text={body_excerpt(result.text, 60)!r}, finish_reason={result.finish_reason}, "
            f"output_tokens={result.output_tokens}"
        )
        return _result(
            name,
            CheckStatus.FAIL,
            took,
            "whitespace-only or incomplete output",
            facts=facts,
            expected=expected,
            got=got,
            cause=_empty_output_cause(result.finish_reason, result.output_tokens),
        )
    summary = (
        f"TTFT {facts['ttft_ms']} ms, {result.output_tokens} tokens in {facts['e2el_ms']} ms "
        f"({facts['tokens_per_s']} tok/s)"
    )
    return _result(name, CheckStatus.PASS, took, summary, facts=facts)


def _stream_cause(failure: streaming.StreamFailure, model: str) -> str:
    kinds = streaming.FailureKind
    if failure.status is not None and failure.kind is not kinds.MALFORMED_STREAM:
        return _cause_for_status(failure.status, failure.detail, model)
    causes = {
        kinds.CONNECT_ERROR: "the server stopped accepting connections after it was ready: it crashed or restarted",
        kinds.CONNECT_TIMEOUT: "the server stopped accepting connections in time: overloaded or restarting",
        kinds.READ_TIMEOUT: "the stream went silent for longer than --timeout: the server stalled or is overloaded",
        kinds.STREAM_INTERRUPTED: (
            "the stream ended before data: [DONE]: the server crashed mid-generation, or a proxy or the "
            "platform's request timeout cut the connection"
        ),
        kinds.EMPTY_OUTPUT: _empty_output_cause("stop", 0),
        kinds.MALFORMED_STREAM: (
            "the body is not vLLM's SSE stream (or lacks the usage chunk stream_options.include_usage asks "
            "for): a proxy rewrote or buffered it, or the server is not vLLM"
        ),
    }
    return causes.get(failure.kind, "the streamed request failed")


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)


def _rate(tokens: int | None, seconds: float) -> float | None:
    return None if not tokens or seconds <= 0 else round(tokens / seconds, 2)


# --- 6. /metrics -----------------------------------------------------------------------------------


async def check_metrics(
    client: httpx.AsyncClient, model: str | None, options: HealthOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.METRICS
    expected = "200 with vLLM's Prometheus metrics (vllm:num_requests_running, ...)"
    start = clock()
    try:
        response = await client.get("/metrics")
    except AuthError as exc:
        return _unauthorised(name, clock() - start, expected, "no credential", str(exc))
    except httpx.HTTPError as exc:
        return _transport_failure(name, clock() - start, expected, exc)
    took = clock() - start
    if response.status_code != httpx.codes.OK:
        return _status_failure(name, took, expected, response=response, model=model, options=options)
    try:
        metrics = parse_metrics(response.text, model=model)
    except MetricsParseError as exc:
        got = f"{exc}; body: {body_excerpt(response.text)}"
        return _result(
            name, CheckStatus.FAIL, took, "not Prometheus text", expected=expected, got=got, cause=_NOT_VLLM_METRICS
        )
    if not metrics.is_vllm:
        got = f"Prometheus text without vllm:* series: {body_excerpt(response.text)}"
        return _result(
            name, CheckStatus.FAIL, took, "no vLLM series", expected=expected, got=got, cause=_NOT_VLLM_METRICS
        )
    facts: dict[str, Fact] = {
        key: value for key, value in metrics.model_dump().items() if isinstance(value, int | float | str | bool | None)
    }
    facts["model_names"] = ",".join(metrics.model_names)
    facts["spec_decode_enabled"] = metrics.spec_decode_enabled
    parts = [
        f"running {_num(metrics.running)}",
        f"waiting {_num(metrics.waiting)}",
        f"KV cache {_pct(metrics.kv_cache_usage)}",
        f"prefix-cache hits {_pct(metrics.prefix_cache_hit_rate)} since start",
        f"preemptions {_num(metrics.preemptions)}",
        "spec decode "
        + (f"acceptance {_pct(metrics.spec_decode_acceptance_rate)}" if metrics.spec_decode_enabled else "off"),
    ]
    return _result(name, CheckStatus.PASS, took, ", ".join(parts), facts=facts)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


# --- shared pieces -------------------------------------------------------------------------------

_NOT_OPENAI = "the answer is not in the OpenAI/vLLM shape: a proxy or another service answered at this URL"
_NOT_VLLM_METRICS = "the endpoint's /metrics is not vLLM's: a proxy or another service answers at this URL"

_Shape = TypeVar("_Shape", bound=pydantic.BaseModel)


async def _get_json(
    client: httpx.AsyncClient,
    path: str,
    shape: type[_Shape],
    *,
    name: CheckName,
    expected: str,
    options: HealthOptions,
    start: float,
    clock: Clock,
) -> _Shape | CheckResult:
    """GET ``path`` and parse it into ``shape``; any other outcome becomes the failed ``CheckResult``."""
    try:
        response = await client.get(path)
    except AuthError as exc:
        return _unauthorised(name, clock() - start, expected, "no credential", str(exc))
    except httpx.HTTPError as exc:
        return _transport_failure(name, clock() - start, expected, exc)
    if response.status_code != httpx.codes.OK:
        return _status_failure(name, clock() - start, expected, response=response, model=None, options=options)
    try:
        return shape.model_validate_json(response.content)
    except pydantic.ValidationError:
        got = f"200 but unexpected body: {body_excerpt(response.text)}"
        return _result(name, CheckStatus.FAIL, clock() - start, got, expected=expected, got=got, cause=_NOT_OPENAI)


def _status_failure(
    name: CheckName,
    took: float,
    expected: str,
    *,
    response: httpx.Response,
    model: str | None,
    options: HealthOptions,
) -> CheckResult:
    got = _status_got(response.status_code, response.text)
    if response.status_code in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        return _unauthorised(name, took, expected, got, options.auth_help)
    cause = _cause_for_status(response.status_code, response.text, model)
    return _result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=cause)


_STATUS_CAUSES: dict[int, str] = {
    429: "no instance could take the request: Cloud Run's concurrency x max instances is exhausted",
    408: "the platform's request timeout (Cloud Run: the service timeout) ended the request first",
    504: "the platform's request timeout (Cloud Run: the service timeout) ended the request first",
    502: "the instance is restarting or failing: read the service's logs",
    503: "the instance is restarting or failing: read the service's logs",
}


def _cause_for_status(status: int, body: str, model: str | None) -> str:
    message = error_message(body) or body_excerpt(body)
    if status == httpx.codes.BAD_REQUEST:
        return f"vLLM rejected the request as invalid ({message}): e.g. max_tokens above max_model_len"
    if status == httpx.codes.NOT_FOUND:
        if "does not exist" in message:
            return f"vLLM does not serve a model named {model!r} ({message})"
        return "no such path: the base URL is wrong (an extra path prefix, or not a vLLM OpenAI server)"
    if status in _STATUS_CAUSES:
        return _STATUS_CAUSES[status]
    if status >= 500:
        return "vLLM failed while handling the request: read the server's log"
    return "an unexpected status for this request"


def _transport_failure(name: CheckName, took: float, expected: str, exc: httpx.HTTPError) -> CheckResult:
    failure = streaming.classify_transport_error(exc)
    got = f"{failure.kind.value}: {failure.detail}"
    cause = (
        "the request timed out (--timeout bounds the silence within one request): the server is stalled or overloaded"
        if failure.kind is streaming.FailureKind.READ_TIMEOUT
        else "the server stopped answering after it was ready: it crashed, restarted or a proxy dropped the connection"
    )
    return _result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=cause)


def _unauthorised(name: CheckName, took: float, expected: str, got: str, cause: str) -> CheckResult:
    return _result(
        name, CheckStatus.UNAUTHORISED, took, f"unauthorised: {got}", expected=expected, got=got, cause=cause
    )


def _status_got(status: int, body: str) -> str:
    reason = httpx.codes.get_reason_phrase(status)
    excerpt = body_excerpt(body)
    return f"{status} {reason}" + (f": {excerpt}" if excerpt else "")


def _result(
    name: CheckName,
    status: CheckStatus,
    took: float,
    summary: str,
    *,
    facts: dict[str, Fact] | None = None,
    expected: str | None = None,
    got: str | None = None,
    cause: str | None = None,
) -> CheckResult:
    return CheckResult(
        name=name,
        status=status,
        duration_s=round(max(took, 0.0), 4),
        summary=summary,
        facts=facts or {},
        expected=expected,
        got=got,
        cause=cause,
    )


# --- the subcommand ------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify health`` to the CLI."""
    parser = subparsers.add_parser(
        "health",
        help="check that an endpoint is ready and really serves the intended model",
        description="Post-deploy checks: readiness, served model, version, chat (plain and streamed), "
        "metrics. Exit codes: 0 all pass, 1 a check failed, 2 usage error or endpoint "
        "unreachable/unauthorised.",
    )
    add_target_arguments(parser)
    parser.add_argument(
        "--wait",
        type=_non_negative_seconds,
        default=DEFAULT_WAIT_S,
        metavar="S",
        help=f"how long to wait for /health to answer 200 (default {DEFAULT_WAIT_S:g}: cold starts load the model)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int("--max-tokens"),
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"max_tokens of the chat checks (default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.set_defaults(handler=run_health_command)


def run_health_command(args: argparse.Namespace) -> int:
    # Imported here: render draws this module's result types, so a top-level import would be circular.
    from verify.render import print_health, print_json, waiting_printer  # noqa: PLC0415

    target = resolve_target(args)
    options = HealthOptions(
        wait_s=args.wait,
        max_tokens=args.max_tokens,
        auth_help=auth_advice(target, api_key_env=args.api_key_env),
    )
    report = asyncio.run(_run(target, args, options, waiting_printer()))
    if args.json:
        print_json(report)
    else:
        print_health(report)
    return report.exit_code


async def _run(
    target: Target, args: argparse.Namespace, options: HealthOptions, on_waiting: ProgressCallback
) -> HealthReport:
    async with client_for(target, args) as client:
        return await run_health(client, target, options, on_waiting=on_waiting)


def _non_negative_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--wait takes seconds as a number, got {value!r}") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"--wait must be 0 or more seconds, got {value!r}")
    return seconds
