"""The measurement of one streamed completion: the unit every health check and benchmark is built on.

Why this exists as one small module: the numbers users act on (time to first token, time per output
token, tokens per second) are only as honest as the way one request is timed. The rules, all taken
from how vLLM 0.32 streams and how `vllm bench serve` measures:

- TTFT stops at the first chunk whose delta carries text (content, reasoning or tool-call arguments),
  never at vLLM's first chunk, which only announces ``role: assistant``.
- ITL is the list of gaps between successive text-bearing chunks. With speculative decoding one chunk
  can carry several tokens, so tokens are never counted from chunks.
- E2EL ends at the last chunk that carries a choice (the one with ``finish_reason``), as
  `vllm bench serve` measures it; the usage chunk and ``[DONE]`` follow within microseconds.
- Output and prompt tokens come only from the final ``usage`` chunk (``stream_options.include_usage``).
- A measured request is never retried: a retry would hide exactly the failures a benchmark must count.
  Every failure is put in one class, with the HTTP status and a short body excerpt when there is one.
- Every request ends: the read timeout bounds the silence between two chunks, a total deadline bounds
  the whole request (a server may stream steadily forever), and a stream that has sent more text
  chunks than ``max_tokens`` (each carries at least one token) is not read further.
- Reasoning (``delta.reasoning``) is kept apart from the answer as well as in ``text``, and usage's
  ``completion_tokens_details.reasoning_tokens`` (sent when the server runs a reasoning parser) is
  kept: `verify query` shows both; an ``on_text`` callback sees each piece as it arrives.
- Only what vLLM sends is a completion chunk: a JSON event without ``choices`` (or a choice without
  ``delta``/``text``), or a line that is not SSE at all, is a malformed stream, never "empty output".
- The answer must be the one asked for: a chunk naming another model than the request's (or one of the names
  ``answer_names`` allows: vLLM names the first ``--served-model-name`` whichever alias was asked) is a
  failure of its own, ``wrong_model``: a proxy or router that sent the request elsewhere measured another
  model. And ``usage`` must agree with the stream: fewer completion tokens than text chunks (each chunk
  carries at least one token), more reasoning tokens than completion tokens, or prompt tokens far from what
  the client knows it sent (``expected_prompt_tokens``, counted by the server itself when the prompt was
  built) is a malformed stream, never a number: 0 completion tokens beside 8 text chunks would be 0 tok/s
  at 100% success, and 100,000 prompt tokens for a 64-token prompt a throughput no hardware has.

Every function takes the HTTP client as a parameter and the clock is injectable.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import aiohttp
import httpx
import pydantic

from verify.responses import body_excerpt

Clock = Callable[[], float]
# Called with each piece of generated text as it arrives, and whether it is reasoning (not the answer).
TextCallback = Callable[[str, bool], None]

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
# The default total deadline of one request is the read timeout (the longest silence, e.g. queueing
# before the first token) plus this per output token asked for: a stream slower than one token a
# second is broken whatever the load, and any healthy one finishes well inside it.
SLOWEST_HEALTHY_TOKEN_S = 1.0
# After data: [DONE] vLLM ends the body at once; a server that keeps it open gets this long before the
# connection is dropped (the measurement is complete by then).
DRAIN_GRACE_S = 1.0
# SSE fields other than data (https://html.spec.whatwg.org/multipage/server-sent-events.html).
_SSE_OTHER_FIELDS = ("event:", "id:", "retry:", ":")
# How far usage's prompt tokens may be from the count the prompt was built to (the server's own count at
# calibration): joining a prompt's parts (a shared prefix, a needle, a chat's history) moves it by a few
# tokens, a chat template by a few tens; a server counting twice (or half) what was sent is not that.
PROMPT_TOKENS_FACTOR = 2.0
PROMPT_TOKENS_SLACK = 64


def default_deadline_s(max_tokens: int, read_timeout_s: float) -> float:
    """The total deadline of one request asking for ``max_tokens`` when the user named none."""
    return read_timeout_s + max_tokens * SLOWEST_HEALTHY_TOKEN_S


class Api(enum.StrEnum):
    """Which OpenAI-compatible endpoint a request goes to."""

    CHAT = "chat"
    COMPLETIONS = "completions"

    @property
    def path(self) -> str:
        return CHAT_PATH if self is Api.CHAT else COMPLETIONS_PATH


class FailureKind(enum.StrEnum):
    """Why a request did not produce a usable measurement; the value is what results record."""

    HTTP_429 = "http_429"  # Cloud Run: no instance can admit it (concurrency x max instances)
    HTTP_503 = "http_503"  # starting/failing instance, or an overloaded server
    HTTP_504 = "http_504"  # the platform's request timeout
    HTTP_STATUS = "http_status"  # any other non-200 status (see `status`)
    CONNECT_ERROR = "connect_error"  # refused, reset or DNS failure before the request was sent
    CONNECT_TIMEOUT = "connect_timeout"
    READ_TIMEOUT = "read_timeout"  # the server went silent for longer than the read timeout
    DEADLINE_EXCEEDED = "deadline_exceeded"  # the request as a whole took longer than its deadline
    TOO_MANY_TOKENS = "too_many_tokens"  # more text chunks than max_tokens: the server ignores it
    STREAM_INTERRUPTED = "stream_interrupted"  # connection cut, or an error event, before [DONE]
    EMPTY_OUTPUT = "empty_output"  # a complete stream without a single text-bearing chunk
    MALFORMED_STREAM = "malformed_stream"  # not SSE, not JSON, no usage chunk, or usage the stream contradicts
    WRONG_MODEL = "wrong_model"  # a chunk names another model than the one asked for


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What to send. ``ignore_eos``/``min_tokens`` are vLLM extensions that force the output length."""

    model: str
    prompt: str
    max_tokens: int
    api: Api = Api.CHAT
    ignore_eos: bool = False
    min_tokens: int | None = None
    extra_body: Mapping[str, object] = field(default_factory=dict)
    # Earlier turns of a chat, (role, content) each, sent before ``prompt`` (chat API only).
    history: tuple[tuple[str, str], ...] = ()
    # Judged, never sent: the names a chunk may give as the model that answered (``model`` is always one;
    # None: not judged), and the prompt tokens the server counted for this prompt when it was built (None:
    # not known), which usage must be near (``prompt_tokens_plausible``).
    answer_names: frozenset[str] | None = None
    expected_prompt_tokens: int | None = None

    def answered_by(self, name: str) -> bool:
        """Whether a chunk naming ``name`` is the model this request asked for."""
        return self.answer_names is None or name == self.model or name in self.answer_names

    def payload(self) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.api is Api.CHAT:
            turns = [{"role": role, "content": content} for role, content in self.history]
            body["messages"] = [*turns, {"role": "user", "content": self.prompt}]
        else:
            body["prompt"] = self.prompt
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.min_tokens is not None:
            body["min_tokens"] = self.min_tokens
        body.update(self.extra_body)
        return body


@dataclass(frozen=True, slots=True)
class StreamFailure:
    kind: FailureKind
    detail: str
    status: int | None = None


@dataclass(frozen=True, slots=True)
class StreamResult:
    """One request's timings in seconds. On failure, whatever was measured before it is kept."""

    ttft_s: float | None
    itl_s: tuple[float, ...]
    e2el_s: float
    output_tokens: int | None
    prompt_tokens: int | None
    finish_reason: str | None
    text: str
    content_chunks: int
    failure: StreamFailure | None = None
    # What the chunks name as the model that answered, and the reasoning part of ``text`` (with its
    # token count from usage when the server reports it: vLLM does so only with a reasoning parser).
    model: str | None = None
    reasoning_text: str = ""
    reasoning_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def tpot_s(self) -> float | None:
        """(E2EL - TTFT) / (output tokens - 1), vLLM's definition; None when it is undefined."""
        if self.ttft_s is None or self.output_tokens is None or self.output_tokens < 2:
            return None
        return (self.e2el_s - self.ttft_s) / (self.output_tokens - 1)


# --- the wire format, parsed at the edge ------------------------------------------------------------


class _Wire(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True)


class _FunctionDelta(_Wire):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(_Wire):
    function: _FunctionDelta | None = None


class _Delta(_Wire):
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None

    def reasoning_text(self) -> str:
        return self.reasoning or self.reasoning_content or ""

    def text(self) -> str:
        parts = [self.reasoning_text(), self.content or ""]
        parts.extend(
            (call.function.name or "") + (call.function.arguments or "")
            for call in self.tool_calls or ()
            if call.function is not None
        )
        return "".join(parts)


class _Choice(_Wire):
    delta: _Delta | None = None
    text: str | None = None
    finish_reason: str | None = None

    @pydantic.model_validator(mode="after")
    def _carries_delta_or_text(self) -> _Choice:
        if self.delta is None and self.text is None:
            raise ValueError("a choice without delta (chat) or text (completions)")
        return self

    def carried_text(self) -> str:
        if self.delta is not None:
            return self.delta.text()
        return self.text or ""

    def carried_reasoning(self) -> str:
        return self.delta.reasoning_text() if self.delta is not None else ""


class _CompletionTokensDetails(_Wire):
    reasoning_tokens: int | None = None


class _Usage(_Wire):
    prompt_tokens: int
    completion_tokens: int
    completion_tokens_details: _CompletionTokensDetails | None = None

    @property
    def reasoning_tokens(self) -> int | None:
        details = self.completion_tokens_details
        return None if details is None else details.reasoning_tokens


class _Chunk(_Wire):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: dict[str, object] | str | None = None
    object: str | None = None
    model: str | None = None

    @pydantic.model_validator(mode="after")
    def _is_a_chunk_or_an_error(self) -> _Chunk:
        if self.choices is None and not self.is_error:
            raise ValueError("a JSON event without choices")
        return self

    @property
    def is_error(self) -> bool:
        """vLLM's error event: ``{"error": {...}}``, or the older flat ``{"object": "error", ...}``."""
        return self.error is not None or self.object == "error"


# --- measuring ----------------------------------------------------------------------------------


class _Progress:
    """What has been seen so far; mutable only inside one measurement."""

    __slots__ = (
        "content_chunks",
        "done",
        "finish_reason",
        "first_text_at",
        "itl",
        "last_choice_at",
        "last_text_at",
        "model",
        "on_text",
        "reasoning_parts",
        "request",
        "start",
        "text_parts",
        "usage",
    )

    def __init__(self, start: float, request: StreamRequest, on_text: TextCallback | None = None) -> None:
        self.start = start
        self.request = request
        self.on_text = on_text
        self.model: str | None = None
        self.reasoning_parts: list[str] = []
        self.first_text_at: float | None = None
        self.last_text_at: float | None = None
        self.last_choice_at: float | None = None
        self.itl: list[float] = []
        self.text_parts: list[str] = []
        self.content_chunks = 0
        self.finish_reason: str | None = None
        self.usage: _Usage | None = None
        self.done = False

    def take(self, chunk: _Chunk, now: float) -> None:
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.model is not None:
            self.model = chunk.model
        if not chunk.choices:
            return
        choice = chunk.choices[0]
        self.last_choice_at = now
        if choice.finish_reason is not None:
            self.finish_reason = choice.finish_reason
        text = choice.carried_text()
        if not text:
            return
        if self.first_text_at is None:
            self.first_text_at = now
        elif self.last_text_at is not None:
            self.itl.append(now - self.last_text_at)
        self.last_text_at = now
        self.content_chunks += 1
        self.text_parts.append(text)
        reasoning = choice.carried_reasoning()
        if reasoning:
            self.reasoning_parts.append(reasoning)
        if self.on_text is not None:
            if reasoning:
                self.on_text(reasoning, True)
            answer = text[len(reasoning) :]
            if answer:
                self.on_text(answer, False)

    def result(self, now: float, failure: StreamFailure | None) -> StreamResult:
        end = self.last_choice_at if (failure is None and self.last_choice_at is not None) else now
        return StreamResult(
            ttft_s=None if self.first_text_at is None else self.first_text_at - self.start,
            itl_s=tuple(self.itl),
            e2el_s=end - self.start,
            output_tokens=None if self.usage is None else self.usage.completion_tokens,
            prompt_tokens=None if self.usage is None else self.usage.prompt_tokens,
            finish_reason=self.finish_reason,
            text="".join(self.text_parts),
            content_chunks=self.content_chunks,
            failure=failure,
            model=self.model,
            reasoning_text="".join(self.reasoning_parts),
            reasoning_tokens=None if self.usage is None else self.usage.reasoning_tokens,
        )

    def completion_failure(self) -> StreamFailure | None:
        """Judge a stream that ended without a transport error."""
        max_tokens = self.request.max_tokens
        if not self.done:
            return StreamFailure(FailureKind.STREAM_INTERRUPTED, "the stream ended before data: [DONE]")
        if self.first_text_at is None:
            return StreamFailure(FailureKind.EMPTY_OUTPUT, "the stream completed without any generated text")
        if self.usage is None:
            return StreamFailure(
                FailureKind.MALFORMED_STREAM,
                "no usage chunk although stream_options.include_usage was requested",
            )
        if self.usage.completion_tokens > max_tokens:
            return StreamFailure(
                FailureKind.TOO_MANY_TOKENS,
                f"usage says {self.usage.completion_tokens} completion tokens, max_tokens was {max_tokens}",
            )
        contradiction = self.usage_contradiction(self.usage)
        if contradiction is not None:
            return StreamFailure(FailureKind.MALFORMED_STREAM, contradiction)
        return None

    def usage_contradiction(self, usage: _Usage) -> str | None:
        """Why ``usage`` cannot describe this stream, or None."""
        if usage.completion_tokens < self.content_chunks:
            return (
                f"usage says {usage.completion_tokens} completion tokens, but the stream carried "
                f"{self.content_chunks} text chunks (each at least one token)"
            )
        reasoning = usage.reasoning_tokens
        if reasoning is not None and not 0 <= reasoning <= usage.completion_tokens:
            return f"usage says {reasoning} reasoning tokens of {usage.completion_tokens} completion tokens"
        expected = self.request.expected_prompt_tokens
        if usage.prompt_tokens < 0 or (
            expected is not None and not prompt_tokens_plausible(usage.prompt_tokens, expected)
        ):
            built = (
                "" if expected is None else f" for a prompt the server counted as {expected} tokens when it was built"
            )
            return f"usage says {usage.prompt_tokens} prompt tokens{built}"
        return None


def prompt_tokens_plausible(reported: int, expected: int) -> bool:
    """Whether usage's ``reported`` prompt tokens can be the prompt built to ``expected`` tokens."""
    low = expected / PROMPT_TOKENS_FACTOR - PROMPT_TOKENS_SLACK
    high = expected * PROMPT_TOKENS_FACTOR + PROMPT_TOKENS_SLACK
    return low <= reported <= high


def status_failure(status: int, body: str) -> StreamFailure:
    """Name a non-200 answer; 429/503/504 get their own class because platforms send them."""
    kinds = {429: FailureKind.HTTP_429, 503: FailureKind.HTTP_503, 504: FailureKind.HTTP_504}
    return StreamFailure(kinds.get(status, FailureKind.HTTP_STATUS), body_excerpt(body), status)


def classify_transport_error(exc: httpx.HTTPError) -> StreamFailure:
    """Name a transport error, looking through httpx to the aiohttp cause when there is one.

    Why the cause: httpx-aiohttp 0.2 maps every aiohttp connection error (refused, or the server
    disconnecting mid-stream) to ``httpx.ConnectTimeout`` and aiohttp's connect timeout to a bare
    ``httpx.TimeoutException``, so the httpx type alone would mislabel them.
    """
    cause = exc.__cause__
    if isinstance(cause, aiohttp.ClientError):
        return _classify_aiohttp(cause, exc)
    return _classify_httpx(exc)


def _classify_aiohttp(cause: aiohttp.ClientError, exc: httpx.HTTPError) -> StreamFailure:
    detail = body_excerpt(f"{type(cause).__name__}: {cause}")
    if isinstance(cause, aiohttp.ConnectionTimeoutError):
        kind = FailureKind.CONNECT_TIMEOUT
    elif isinstance(cause, aiohttp.SocketTimeoutError | aiohttp.ServerTimeoutError):
        kind = FailureKind.READ_TIMEOUT
    elif isinstance(cause, aiohttp.ClientConnectorError):
        kind = FailureKind.CONNECT_ERROR
    elif isinstance(cause, aiohttp.ClientPayloadError | aiohttp.ClientConnectionError):
        # A payload cut short, a server disconnect or a reset after the request was sent.
        kind = FailureKind.STREAM_INTERRUPTED
    else:
        return _classify_httpx(exc)
    return StreamFailure(kind, detail)


def _classify_httpx(exc: httpx.HTTPError) -> StreamFailure:
    detail = body_excerpt(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        kind = FailureKind.CONNECT_TIMEOUT
    elif isinstance(exc, httpx.TimeoutException):
        kind = FailureKind.READ_TIMEOUT
    elif isinstance(exc, httpx.ConnectError):
        kind = FailureKind.CONNECT_ERROR
    else:
        kind = FailureKind.STREAM_INTERRUPTED
    return StreamFailure(kind, detail)


def _data_of(line: str) -> str | None:
    """The payload of an SSE ``data:`` line; None for blank lines, comments and other fields."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _take_line(line: str, progress: _Progress, clock: Clock) -> StreamFailure | None:
    """Account for one line of the body; a failure ends the reading."""
    data = _data_of(line)
    if data is None:
        if line.strip() and not line.startswith(_SSE_OTHER_FIELDS):
            return StreamFailure(FailureKind.MALFORMED_STREAM, body_excerpt(f"not an SSE line: {line}"))
        return None
    if data == "[DONE]":
        progress.done = True
    if not data or progress.done:
        return None
    now = clock()
    chunk = _parse_chunk(data)
    if isinstance(chunk, StreamFailure):
        return chunk
    return _take_chunk(chunk, progress, now)


def _take_chunk(chunk: _Chunk, progress: _Progress, now: float) -> StreamFailure | None:
    """Account for one completion chunk: another model's, or one past ``max_tokens``, ends the reading."""
    if chunk.model is not None and not progress.request.answered_by(chunk.model):
        progress.model = chunk.model
        return StreamFailure(
            FailureKind.WRONG_MODEL,
            body_excerpt(f"asked for {progress.request.model}, a chunk names {chunk.model}: another model answered"),
        )
    progress.take(chunk, now)
    max_tokens = progress.request.max_tokens
    if progress.content_chunks > max_tokens:
        return StreamFailure(
            FailureKind.TOO_MANY_TOKENS,
            f"{progress.content_chunks} text chunks (at least one token each) for max_tokens {max_tokens}; "
            "stopped reading",
        )
    return None


def _parse_chunk(data: str) -> _Chunk | StreamFailure:
    try:
        chunk = _Chunk.model_validate_json(data)
    except pydantic.ValidationError:
        return StreamFailure(FailureKind.MALFORMED_STREAM, body_excerpt(f"not a completion chunk: {data}"))
    if chunk.is_error:
        return StreamFailure(FailureKind.STREAM_INTERRUPTED, body_excerpt(f"error event: {data}"))
    return chunk


async def _read_events(response: httpx.Response, progress: _Progress, clock: Clock) -> StreamFailure | None:
    lines = response.aiter_lines()
    async for line in lines:
        failure = _take_line(line, progress, clock)
        if failure is not None:
            return failure
        if progress.done:
            await _drain(lines)
            break
    return progress.completion_failure()


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read the body to its end after [DONE]: a response left half-read cannot go back to the pool,
    and the next request would pay a new connection (a TLS handshake on Cloud Run) inside its TTFT.
    A server that keeps the body open after [DONE] gets ``DRAIN_GRACE_S``; then the connection is
    dropped, and the request, complete already, still counts."""
    try:
        async with asyncio.timeout(DRAIN_GRACE_S):
            async for _ in lines:
                pass
    except (TimeoutError, httpx.HTTPError):
        return


async def measure_stream(
    client: httpx.AsyncClient,
    request: StreamRequest,
    *,
    timeouts: httpx.Timeout | None = None,
    deadline_s: float | None = None,
    clock: Clock = time.perf_counter,
    on_text: TextCallback | None = None,
) -> StreamResult:
    """Send one streamed completion and time it; never raises for HTTP trouble, never retries.

    ``client`` carries the base URL and auth; ``timeouts`` override the client's per request (the read
    timeout bounds the silence between two chunks, which is how a stalled stream is caught);
    ``deadline_s`` bounds the whole request (None: the read timeout plus one second per token asked);
    ``on_text`` sees each piece of text as it arrives (for a person watching the answer stream).
    """
    if deadline_s is None:
        read = (timeouts or client.timeout).read
        deadline_s = None if read is None else default_deadline_s(request.max_tokens, read)
    progress = _Progress(clock(), request, on_text)
    failure: StreamFailure | None
    deadline = asyncio.timeout(deadline_s)
    try:
        async with (
            deadline,
            client.stream(
                "POST",
                request.api.path,
                json=request.payload(),
                timeout=timeouts if timeouts is not None else httpx.USE_CLIENT_DEFAULT,
            ) as response,
        ):
            if response.status_code != httpx.codes.OK:
                body = (await response.aread()).decode("utf-8", errors="replace")
                failure = status_failure(response.status_code, body)
            elif "text/event-stream" not in response.headers.get("content-type", ""):
                body = (await response.aread()).decode("utf-8", errors="replace")
                failure = StreamFailure(
                    FailureKind.MALFORMED_STREAM,
                    body_excerpt(f"expected text/event-stream, got {response.headers.get('content-type')}: {body}"),
                    response.status_code,
                )
            else:
                failure = await _read_events(response, progress, clock)
    except httpx.HTTPError as exc:
        failure = classify_transport_error(exc)
    except TimeoutError:
        if not deadline.expired():
            raise
        failure = StreamFailure(FailureKind.DEADLINE_EXCEEDED, f"the request did not end within {deadline_s} s")
    return progress.result(clock(), failure)
