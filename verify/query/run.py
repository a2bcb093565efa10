"""Ask one prompt and report what came back: TTFT, output tokens per second, usage, finish reason, model.

Why this is not a health check: a person asks their own question and reads the answer; the numbers are
those of that one request, measured the way a benchmark measures (verify/streaming.py: TTFT to the
first text chunk, tokens only from ``usage``, never retried, bounded by max tokens and a deadline).
"""

from __future__ import annotations

import asyncio
import enum
import time

import httpx
import pydantic

from verify import UsageError, streaming
from verify.discovery import AnswerError, find_card, served_models
from verify.endpoint import EndpointOptions, Target
from verify.health.diagnosis import stream_cause
from verify.reach import Reach, endpoint_client
from verify.streaming import FailureKind, StreamRequest, StreamResult, TextCallback

DEFAULT_MAX_TOKENS = 512
# Faster than this per single stream is no decode rate but a burst: the answer arrived at once (the server
# or a proxy buffered the stream), and (tokens - 1) / (E2E - TTFT) would divide by almost nothing. The
# fastest single-stream decoding reported for models of this size is a few thousand tokens a second.
BURST_TOKENS_PER_S = 10_000.0
# Failures that mean "could not ask" (exit 2, like an unreachable endpoint elsewhere), not "a bad answer".
_COULD_NOT_ASK = frozenset({FailureKind.CONNECT_ERROR, FailureKind.CONNECT_TIMEOUT})
_UNAUTHORISED = frozenset({401, 403})


class ReasoningDisplay(enum.StrEnum):
    """Whether the model's reasoning is printed; it is always counted."""

    SHOW = "show"
    HIDE = "hide"


class QueryOptions(EndpointOptions):
    """What ``verify query`` asks (its flags, typed); the model is the target's (``--model``), else the one
    name ``/v1/models`` lists."""

    prompt: str = pydantic.Field(min_length=1)
    max_tokens: int = pydantic.Field(default=DEFAULT_MAX_TOKENS, ge=1)
    temperature: float | None = pydantic.Field(default=None, ge=0)
    system: str | None = None
    reasoning: ReasoningDisplay = ReasoningDisplay.SHOW


class QueryReport(pydantic.BaseModel):
    """One request's outcome; on failure whatever was measured before it is kept."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    asked_model: str
    served_model: str | None
    answer: str
    reasoning: str | None  # None when hidden
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None  # only servers running a reasoning parser report it
    ttft_ms: float | None
    e2e_ms: float
    output_tokens_per_s: float | None  # decode speed after the first token: 1 / TPOT (None: a burst)
    tokens_per_s_overall: float | None  # completion tokens / end-to-end time
    note: str | None = None  # why a number is missing
    failure: str | None = None
    failure_detail: str | None = None
    status: int | None = None
    cause: str | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 answered; 2 could not ask (unreachable, unauthorised); 1 the answer failed."""
        if self.failure is None:
            return 0
        if self.status in _UNAUTHORISED or self.failure in _COULD_NOT_ASK:
            return 2
        return 1


def run_query(
    target: Target,
    options: QueryOptions,
    *,
    on_text: TextCallback | None = None,
    reach: Reach | None = None,
) -> QueryReport:
    """Ask ``target`` the prompt and report it; ``on_text`` hears the text as it streams.

    Raises ``UsageError`` (exit 2) before sending when the credential's source is missing, or when no model
    was named and the server does not list exactly one. Runs its own event loop.
    """

    async def asked() -> QueryReport:
        async with endpoint_client(target, options, reach) as client:
            model = target.model or await the_one_model(client)
            return await ask(client, target.base_url, options, model=model, on_text=on_text)

    return asyncio.run(asked())


async def the_one_model(client: httpx.AsyncClient) -> str:
    """With no --model, the one name /v1/models lists; otherwise a usage error naming the choices."""
    try:
        models = await served_models(client)
    except AnswerError as exc:
        raise UsageError(f"--model not given and GET {exc.path} failed ({exc.problem.value}); pass --model") from None
    card = find_card(models, None)
    if card is None:
        raise UsageError(f"--model not given and the server lists {models.names}; pass --model NAME")
    return card.id


async def ask(
    client: httpx.AsyncClient,
    base_url: str,
    options: QueryOptions,
    *,
    model: str,
    on_text: TextCallback | None = None,
    clock: streaming.Clock = time.perf_counter,
) -> QueryReport:
    """Send the prompt to ``model`` as one streamed chat completion and report it."""
    extra: dict[str, object] = {}
    if options.temperature is not None:
        extra["temperature"] = options.temperature
    if options.system is not None:
        extra["messages"] = [
            {"role": "system", "content": options.system},
            {"role": "user", "content": options.prompt},
        ]
    request = StreamRequest(model=model, prompt=options.prompt, max_tokens=options.max_tokens, extra_body=extra)
    deadline_s = options.timeouts.request_deadline_s(options.max_tokens)
    found = await streaming.measure_stream(client, request, deadline_s=deadline_s, clock=clock, on_text=on_text)
    return report_of(found, base_url, model, options.reasoning)


def report_of(found: StreamResult, base_url: str, model: str, reasoning: ReasoningDisplay) -> QueryReport:
    answer = found.text[len(found.reasoning_text) :] if found.text.startswith(found.reasoning_text) else found.text
    failure = found.failure
    tpot = found.tpot_s
    decode = None if tpot is None or tpot <= 0 else 1 / tpot
    note = None
    if tpot is not None and (decode is None or decode > BURST_TOKENS_PER_S):
        decode = None
        note = (
            f"the answer arrived in a burst ({found.content_chunks} chunks within "
            f"{(found.e2el_s - (found.ttft_s or 0)) * 1000:.2f} ms after the first): no decode rate; the server "
            "or a proxy buffered the stream"
        )
    return QueryReport(
        base_url=base_url,
        asked_model=model,
        served_model=found.model,
        answer=answer,
        reasoning=found.reasoning_text if reasoning is ReasoningDisplay.SHOW else None,
        finish_reason=found.finish_reason,
        prompt_tokens=found.prompt_tokens,
        completion_tokens=found.output_tokens,
        reasoning_tokens=found.reasoning_tokens,
        ttft_ms=None if found.ttft_s is None else found.ttft_s * 1000,
        e2e_ms=found.e2el_s * 1000,
        output_tokens_per_s=decode,
        tokens_per_s_overall=(
            found.output_tokens / found.e2el_s if found.output_tokens is not None and found.e2el_s > 0 else None
        ),
        failure=None if failure is None else failure.kind.value,
        failure_detail=None if failure is None else failure.detail,
        status=None if failure is None else failure.status,
        # No readiness check runs before a query: a refused connection is not a crash after readiness.
        cause=None if failure is None else stream_cause(failure, model, readiness_checked=False),
        note=note,
    )
