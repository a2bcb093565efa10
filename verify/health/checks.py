"""Checks 2 to 6 and the order they run in (check 1, readiness, is verify/health/readiness.py).

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
- Every request has a total deadline (``CheckOptions.deadline_s``) besides the read timeout, which
  only bounds silence: a server that answers forever must still end the check.
- A check that cannot run because an earlier one failed is reported as skipped, with the reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
import pydantic

from verify import discovery, streaming
from verify.auth import AuthError
from verify.endpoint import Target
from verify.health.diagnosis import (
    NOT_OPENAI,
    NOT_VLLM_METRICS,
    cause_for_status,
    empty_output_cause,
    status_got,
    stream_cause,
    transport_cause,
)
from verify.health.quality import run_quality
from verify.health.readiness import check_readiness
from verify.health.report import (
    CheckName,
    CheckOptions,
    CheckResult,
    CheckStatus,
    Fact,
    HealthReport,
    ProgressCallback,
    TargetFacts,
    result,
    skipped,
    unauthorised,
)
from verify.prom import MetricsParseError, parse_metrics
from verify.responses import ChatCompletion, ModelList, VersionInfo, body_excerpt

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

_Shape = TypeVar("_Shape", bound=pydantic.BaseModel)


async def run_checks(
    client: httpx.AsyncClient,
    target: Target,
    options: CheckOptions | None = None,
    *,
    clock: Clock = time.perf_counter,
    sleep: Sleep = asyncio.sleep,
    on_waiting: ProgressCallback | None = None,
) -> HealthReport:
    """Run every check in order against ``client`` (which carries the base URL and credential)."""
    opts = options if options is not None else CheckOptions()
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
            checks.append(skipped(CheckName.CHAT, "no served model name to ask (see the models check)"))
        else:
            checks.append(await check_chat(client, model, opts, clock=clock))
    if not _stopped(checks):
        if model is None:
            checks.append(skipped(CheckName.CHAT_STREAM, "no served model name to ask (see the models check)"))
        else:
            checks.append(await check_chat_stream(client, model, opts, clock=clock))
    if not _stopped(checks):
        checks.append(await check_metrics(client, model, opts, clock=clock))

    done = {check.name for check in checks}
    reason = _stop_reason(checks)
    checks.extend(skipped(name, reason) for name in CheckName if name not in done)
    facts = TargetFacts(
        base_url=target.base_url,
        source=target.source,
        auth=target.auth_kind.value,
        model=target.model or model,
        model_discovered=target.model is None and model is not None,
        platform=target.platform,
        accelerator=target.accelerator,
    )
    quality = []
    if opts.quality is not None and model is not None and not _stopped(checks):
        quality = await run_quality(client, model, opts.quality, clock=clock)
    return HealthReport(target=facts, vllm_version=version, checks=checks, quality=quality)


def _stopped(checks: list[CheckResult]) -> bool:
    """After an unreachable or unauthorised answer nothing else can be learnt."""
    return any(check.status in {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED} for check in checks)


def _stop_reason(checks: list[CheckResult]) -> str:
    for check in checks:
        if check.status in {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED}:
            return f"not run: the {check.name.value} check found the endpoint {check.status.value}"
    return "not run"


def _str_fact(value: Fact) -> str | None:
    return value if isinstance(value, str) else None


# --- 2. /v1/models --------------------------------------------------------------------------------


async def check_models(
    client: httpx.AsyncClient, target: Target, options: CheckOptions, *, clock: Clock = time.perf_counter
) -> tuple[CheckResult, str | None]:
    """Whether the expected served name is listed; returns the name later checks should use."""
    name = CheckName.MODELS
    expected_name = target.model
    expected = f"/v1/models lists {expected_name!r}" if expected_name else "/v1/models lists exactly one served model"
    start = clock()
    outcome = await _get_json(
        client,
        discovery.MODELS_PATH,
        ModelList,
        name=name,
        expected=expected,
        options=options,
        start=start,
        clock=clock,
    )
    if isinstance(outcome, CheckResult):
        return outcome, None
    models = outcome
    took = clock() - start
    names = models.names
    served = ", ".join(repr(n) for n in names) or "no models"
    facts: dict[str, Fact] = {"served": ",".join(names)}
    card = discovery.find_card(models, expected_name)
    if expected_name is None:
        if card is not None:
            facts["max_model_len"] = card.max_model_len
            summary = f"serves {card.id!r} (no --model given: using it)"
            return result(name, CheckStatus.PASS, took, summary, facts=facts), card.id
        cause = "name the model clients use with --model" if names else "the server loaded no model"
        return result(
            name, CheckStatus.FAIL, took, f"serves {served}", facts=facts, expected=expected, got=served, cause=cause
        ), None
    if card is None:
        cause = (
            f"the served name differs from the one clients use, so requests for {expected_name!r} get 404: "
            "vLLM's --served-model-name (the stack's servedModelName) and --model must agree"
        )
        return (
            result(
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
    return result(name, CheckStatus.PASS, took, summary, facts=facts), expected_name


# --- 3. /version ----------------------------------------------------------------------------------


async def check_version(
    client: httpx.AsyncClient, options: CheckOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.VERSION
    start = clock()
    expected = '200 {"version": ...}'
    outcome = await _get_json(
        client,
        discovery.VERSION_PATH,
        VersionInfo,
        name=name,
        expected=expected,
        options=options,
        start=start,
        clock=clock,
    )
    if isinstance(outcome, CheckResult):
        return outcome
    return result(
        name, CheckStatus.PASS, clock() - start, f"vLLM {outcome.version}", facts={"vllm_version": outcome.version}
    )


# --- 4. chat completion -----------------------------------------------------------------------------


async def check_chat(
    client: httpx.AsyncClient, model: str, options: CheckOptions, *, clock: Clock = time.perf_counter
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
    response = await _send(
        client.post(streaming.CHAT_PATH, json=payload),
        name=name,
        expected=expected,
        options=options,
        start=start,
        clock=clock,
    )
    if isinstance(response, CheckResult):
        return response
    took = clock() - start
    if response.status_code != httpx.codes.OK:
        return _status_failure(
            name, took, expected, status=response.status_code, body=response.text, model=model, options=options
        )
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
        return result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=NOT_OPENAI)
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
        cause = empty_output_cause(choice.finish_reason, tokens)
        return result(
            name, CheckStatus.FAIL, took, ", ".join(problems), facts=facts, expected=expected, got=got, cause=cause
        )
    shown = content.strip() or reasoning.strip()
    where = "" if content.strip() else " (only in reasoning: raise --max-tokens to see content)"
    summary = f"{body_excerpt(shown, 40)!r}{where}, finish {choice.finish_reason}, {tokens} tokens"
    return result(name, CheckStatus.PASS, took, summary, facts=facts)


# --- 5. streamed chat completion (measured by verify/streaming.py) -----------------------------------


async def check_chat_stream(
    client: httpx.AsyncClient, model: str, options: CheckOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.CHAT_STREAM
    expected = "an SSE stream with text, a finish_reason, a usage chunk and data: [DONE]"
    request = streaming.StreamRequest(
        model=model, prompt=options.prompt, max_tokens=options.max_tokens, extra_body={"temperature": 0}
    )
    start = clock()
    try:
        measured = await streaming.measure_stream(client, request, deadline_s=options.deadline_s, clock=clock)
    except AuthError as exc:
        return unauthorised(name, clock() - start, expected, "no credential", str(exc))
    took = clock() - start
    facts: dict[str, Fact] = {
        "ttft_ms": _ms(measured.ttft_s),
        "e2el_ms": _ms(measured.e2el_s),
        "output_tokens": measured.output_tokens,
        "prompt_tokens": measured.prompt_tokens,
        "text_chunks": measured.content_chunks,
        "finish_reason": measured.finish_reason,
        "tokens_per_s": _rate(measured.output_tokens, measured.e2el_s),
        "decode_tokens_per_s": None if not measured.tpot_s else round(1.0 / measured.tpot_s, 2),
    }
    failure = measured.failure
    if failure is not None:
        if failure.status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
            return unauthorised(name, took, expected, f"{failure.status}: {failure.detail}", options.auth_help)
        got = f"{failure.kind.value}" + (f" {failure.status}" if failure.status else "") + f": {failure.detail}"
        return result(
            name,
            CheckStatus.FAIL,
            took,
            f"{failure.kind.value}",
            facts=facts,
            expected=expected,
            got=got,
            cause=stream_cause(failure, model),
        )
    if not measured.text.strip() or measured.finish_reason is None or not measured.output_tokens:
        got = (
            f"text={body_excerpt(measured.text, 60)!r}, finish_reason={measured.finish_reason}, "
            f"output_tokens={measured.output_tokens}"
        )
        return result(
            name,
            CheckStatus.FAIL,
            took,
            "whitespace-only or incomplete output",
            facts=facts,
            expected=expected,
            got=got,
            cause=empty_output_cause(measured.finish_reason, measured.output_tokens),
        )
    summary = (
        f"TTFT {facts['ttft_ms']} ms, {measured.output_tokens} tokens in {facts['e2el_ms']} ms "
        f"({facts['tokens_per_s']} tok/s)"
    )
    return result(name, CheckStatus.PASS, took, summary, facts=facts)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)


def _rate(tokens: int | None, seconds: float) -> float | None:
    return None if not tokens or seconds <= 0 else round(tokens / seconds, 2)


# --- 6. /metrics -----------------------------------------------------------------------------------


async def check_metrics(
    client: httpx.AsyncClient, model: str | None, options: CheckOptions, *, clock: Clock = time.perf_counter
) -> CheckResult:
    name = CheckName.METRICS
    expected = "200 with vLLM's Prometheus metrics (vllm:num_requests_running, ...)"
    start = clock()
    response = await _send(
        client.get("/metrics"), name=name, expected=expected, options=options, start=start, clock=clock
    )
    if isinstance(response, CheckResult):
        return response
    took = clock() - start
    if response.status_code != httpx.codes.OK:
        return _status_failure(
            name, took, expected, status=response.status_code, body=response.text, model=model, options=options
        )
    try:
        metrics = parse_metrics(response.text, model=model)
    except MetricsParseError as exc:
        got = f"{exc}; body: {body_excerpt(response.text)}"
        return result(
            name, CheckStatus.FAIL, took, "not Prometheus text", expected=expected, got=got, cause=NOT_VLLM_METRICS
        )
    if not metrics.is_vllm:
        got = f"Prometheus text without vllm:* series: {body_excerpt(response.text)}"
        return result(
            name, CheckStatus.FAIL, took, "no vLLM series", expected=expected, got=got, cause=NOT_VLLM_METRICS
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
    return result(name, CheckStatus.PASS, took, ", ".join(parts), facts=facts)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


# --- shared pieces -------------------------------------------------------------------------------


async def _send(
    request: Awaitable[httpx.Response],
    *,
    name: CheckName,
    expected: str,
    options: CheckOptions,
    start: float,
    clock: Clock,
) -> httpx.Response | CheckResult:
    """Await one non-streamed request within the deadline; no answer becomes the failed ``CheckResult``."""
    try:
        async with asyncio.timeout(options.deadline_s):
            return await request
    except AuthError as exc:
        return unauthorised(name, clock() - start, expected, "no credential", str(exc))
    except TimeoutError:
        return _transport_failure(name, clock() - start, expected, _deadline_failure(options))
    except httpx.HTTPError as exc:
        return _transport_failure(name, clock() - start, expected, streaming.classify_transport_error(exc))


async def _get_json(
    client: httpx.AsyncClient,
    path: str,
    shape: type[_Shape],
    *,
    name: CheckName,
    expected: str,
    options: CheckOptions,
    start: float,
    clock: Clock,
) -> _Shape | CheckResult:
    """GET ``path`` and parse it into ``shape``; any other outcome becomes the failed ``CheckResult``."""
    try:
        async with asyncio.timeout(options.deadline_s):
            return await discovery.get_json(client, path, shape)
    except AuthError as exc:
        return unauthorised(name, clock() - start, expected, "no credential", str(exc))
    except TimeoutError:
        return _transport_failure(name, clock() - start, expected, _deadline_failure(options))
    except discovery.AnswerError as exc:
        took = clock() - start
        if exc.failure is not None:
            return _transport_failure(name, took, expected, exc.failure)
        if exc.problem is discovery.AnswerProblem.STATUS and exc.status is not None:
            return _status_failure(name, took, expected, status=exc.status, body=exc.body, model=None, options=options)
        got = f"200 but unexpected body: {body_excerpt(exc.body)}"
        return result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=NOT_OPENAI)


def _status_failure(
    name: CheckName,
    took: float,
    expected: str,
    *,
    status: int,
    body: str,
    model: str | None,
    options: CheckOptions,
) -> CheckResult:
    got = status_got(status, body)
    if status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        return unauthorised(name, took, expected, got, options.auth_help)
    cause = cause_for_status(status, body, model)
    return result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=cause)


def _deadline_failure(options: CheckOptions) -> streaming.StreamFailure:
    return streaming.StreamFailure(
        streaming.FailureKind.DEADLINE_EXCEEDED, f"no complete answer within --deadline {options.deadline_s:g} s"
    )


def _transport_failure(name: CheckName, took: float, expected: str, failure: streaming.StreamFailure) -> CheckResult:
    got = f"{failure.kind.value}: {failure.detail}"
    return result(name, CheckStatus.FAIL, took, got, expected=expected, got=got, cause=transport_cause(failure))
