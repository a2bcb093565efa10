"""verify.streaming: one streamed request, timed by vLLM's definitions and failures put in classes.

Runs against tests/fake_vllm.py on 127.0.0.1 (real sockets), over both transports the CLI can use,
because the two report the same network trouble as different exceptions.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import httpx
import pytest

from remote.tls import default_tls
from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig, free_port
from verify.bench.stall import StallMonitor
from verify.client import UNLIMITED, aiohttp_transport
from verify.streaming import (
    SLOWEST_HEALTHY_TOKEN_S,
    Api,
    FailureKind,
    StreamRequest,
    classify_transport_error,
    default_deadline_s,
    measure_stream,
)

TRANSPORTS: dict[str, Callable[[], httpx.AsyncBaseTransport]] = {
    "aiohttp": aiohttp_transport,
    "httpx": lambda: httpx.AsyncHTTPTransport(verify=default_tls(), limits=UNLIMITED),
}
FAST = httpx.Timeout(5.0, connect=2.0)
Serve = Callable[[FakeVllmConfig], Awaitable[httpx.AsyncClient]]


def request(api: Api = Api.CHAT, **overrides: object) -> StreamRequest:
    fields: dict[str, object] = {"model": "tiny-gemma", "prompt": "hi", "max_tokens": 5, "api": api}
    fields.update(overrides)
    return StreamRequest(**fields)  # type: ignore[arg-type]


@pytest.fixture(params=sorted(TRANSPORTS))
def transport_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def serve(transport_name: str) -> AsyncIterator[Serve]:
    """Start a fake server with a config and give back a client for it (closed after the test)."""
    servers: list[FakeVllm] = []
    clients: list[httpx.AsyncClient] = []

    async def start(config: FakeVllmConfig) -> httpx.AsyncClient:
        server = FakeVllm(config)
        await server.start()
        servers.append(server)
        client = httpx.AsyncClient(base_url=server.url, transport=TRANSPORTS[transport_name](), timeout=FAST)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.aclose()
    for server in servers:
        await server.stop()


def ticking_clock() -> Callable[[], float]:
    """A clock that advances one second per reading: every timestamp the code takes is known."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


@pytest.mark.parametrize("api", list(Api))
async def test_timings_follow_vllm_definitions_exactly(serve: Serve, api: Api) -> None:
    """Guards against TTFT stopped on vLLM's role-only first chunk, ITL counted from it, and E2EL
    stretched to the usage chunk: with a clock that ticks once per reading the numbers are exact."""
    client = await serve(FakeVllmConfig(pieces=("a", "b", "c", "d"), tokens_per_piece=1))
    result = await measure_stream(client, request(api), clock=ticking_clock())
    # Readings: start=0; chat only: role chunk=1; text chunks next; then the usage chunk; then the end.
    first_text = 2.0 if api is Api.CHAT else 1.0
    assert result.ok, result.failure
    assert result.ttft_s == first_text
    assert result.itl_s == (1.0, 1.0, 1.0)
    assert result.e2el_s == first_text + 3.0  # the last choice chunk, not the usage chunk after it
    assert result.tpot_s == pytest.approx(1.0)
    assert result.text == "abcd"
    assert result.finish_reason == "length"


async def test_output_tokens_come_from_usage_not_chunks(serve: Serve) -> None:
    """Guards against counting SSE chunks as tokens: with speculative decoding a chunk carries several."""
    client = await serve(FakeVllmConfig(pieces=("ab", "cd", "ef"), tokens_per_piece=3))
    result = await measure_stream(client, request(max_tokens=9))
    assert result.content_chunks == 3
    assert result.output_tokens == 9
    assert result.prompt_tokens == 13


async def test_injected_delays_are_measured_within_tight_tolerance(serve: Serve) -> None:
    """Guards against a timing bug (wrong clock, wrong chunk) that real delays would expose."""
    client = await serve(FakeVllmConfig(pieces=("a", "b", "c"), ttft_s=0.15, itl_s=[0.05, 0.1]))
    async with StallMonitor() as monitor:
        result = await measure_stream(client, request())
    assert result.ok
    assert result.ttft_s is not None
    # TTFT and E2EL count from the request's start: their lower bounds are exact (the server sleeps at
    # least this long). A gap between two chunks is not: when the earlier chunk is read late and the next
    # on time, the measured gap is shorter than the server's sleep by that lateness (0.0495 s for a 0.05 s
    # sleep was seen on a loaded machine), so gaps may fall short by the same budget. Upper bounds allow
    # 30 ms of jitter plus whatever the machine measurably stalled this event loop (client and server
    # share it).
    slack = 0.03 + monitor.summary().stalled_ms / 1000.0
    assert 0.15 <= result.ttft_s < 0.15 + slack
    assert len(result.itl_s) == 2
    assert 0.05 - slack <= result.itl_s[0] < 0.05 + slack
    assert 0.1 - slack <= result.itl_s[1] < 0.1 + slack
    assert sum(result.itl_s) >= 0.15 - slack
    assert 0.30 <= result.e2el_s < 0.30 + slack


async def test_reasoning_text_counts_as_the_first_token(serve: Serve) -> None:
    """Guards against a reasoning model reporting no TTFT because its first text is in `reasoning`."""
    client = await serve(FakeVllmConfig(text_field="reasoning"))
    result = await measure_stream(client, request())
    assert result.ok
    assert result.ttft_s is not None
    assert result.text == " Hello from a fake server"


async def test_payload_forces_the_output_length_on_vllm() -> None:
    """Guards against benchmarks whose outputs end early at EOS (ignore_eos/min_tokens not sent) or
    carry no usage (include_usage not asked for)."""
    server = FakeVllm(FakeVllmConfig())
    async with server, httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client:
        await measure_stream(client, request(ignore_eos=True, min_tokens=5))
    body = server.requests[-1].body
    assert isinstance(body, dict)
    assert body["ignore_eos"] is True
    assert body["min_tokens"] == 5
    assert body["max_tokens"] == 5
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, FailureKind.HTTP_429),
        (503, FailureKind.HTTP_503),
        (504, FailureKind.HTTP_504),
        (500, FailureKind.HTTP_STATUS),
    ],
)
async def test_statuses_are_classified_with_body_excerpt(serve: Serve, status: int, kind: FailureKind) -> None:
    """Guards against platform answers (Cloud Run 429/503/504) being lumped into one 'error'."""
    client = await serve(FakeVllmConfig(status_sequences={CHAT_PATH: [status]}))
    result = await measure_stream(client, request())
    assert result.failure is not None
    assert result.failure.kind is kind
    assert result.failure.status == status
    assert result.failure.detail


async def test_unknown_model_keeps_vllms_message(serve: Serve) -> None:
    """Guards against a 404 whose cause (wrong served name) is lost."""
    client = await serve(FakeVllmConfig())
    result = await measure_stream(client, request(model="nope"))
    assert result.failure is not None
    assert result.failure.kind is FailureKind.HTTP_STATUS
    assert result.failure.status == 404
    assert "does not exist" in result.failure.detail


async def test_refused_connection_is_a_connect_error(transport_name: str) -> None:
    """Guards against httpx-aiohttp's mapping, which reports a refused connection as ConnectTimeout."""
    port = free_port()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", transport=TRANSPORTS[transport_name]()) as client:
        result = await measure_stream(client, request(), timeouts=FAST)
    assert result.failure is not None
    assert result.failure.kind is FailureKind.CONNECT_ERROR


async def test_stall_past_the_read_timeout_is_a_read_timeout(serve: Serve) -> None:
    """Guards against a stalled stream hanging a benchmark or being called a connection error."""
    client = await serve(FakeVllmConfig(pieces=("a", "b", "c"), itl_s=[0.0, 2.0]))
    result = await measure_stream(client, request(), timeouts=httpx.Timeout(0.3, connect=2.0))
    assert result.failure is not None
    assert result.failure.kind is FailureKind.READ_TIMEOUT
    assert result.text == "ab"  # what came before the stall is kept
    assert result.ttft_s is not None


async def test_stream_cut_mid_way_is_interrupted(serve: Serve) -> None:
    """Guards against a dropped connection being counted as a success with a short output."""
    client = await serve(FakeVllmConfig(pieces=("a", "b", "c", "d"), cut_stream_after_chunks=2))
    result = await measure_stream(client, request())
    assert result.failure is not None
    assert result.failure.kind is FailureKind.STREAM_INTERRUPTED


async def test_malformed_sse_is_reported(serve: Serve) -> None:
    """Guards against a proxy mangling the stream without anyone noticing."""
    client = await serve(FakeVllmConfig(malformed_sse_after_chunks=1))
    result = await measure_stream(client, request())
    assert result.failure is not None
    assert result.failure.kind is FailureKind.MALFORMED_STREAM


async def test_missing_usage_is_malformed_not_guessed(serve: Serve) -> None:
    """Guards against falling back to chunk counts when the server ignores include_usage."""
    client = await serve(FakeVllmConfig(omit_usage=True))
    result = await measure_stream(client, request())
    assert result.failure is not None
    assert result.failure.kind is FailureKind.MALFORMED_STREAM
    assert result.output_tokens is None


async def test_chunks_naming_another_model_are_a_failure_of_their_own(serve: Serve) -> None:
    """A router or proxy that sent the request to another model returned that model's numbers at 100% success:
    a chunk naming a model the request did not ask for fails it as wrong_model, with both names."""
    client = await serve(FakeVllmConfig(chunk_model="gemma-4-e2b-it"))
    result = await measure_stream(client, request(answer_names=frozenset({"tiny-gemma"})))
    assert result.failure is not None
    assert result.failure.kind is FailureKind.WRONG_MODEL
    assert "tiny-gemma" in result.failure.detail
    assert "gemma-4-e2b-it" in result.failure.detail
    assert result.model == "gemma-4-e2b-it"


async def test_an_alias_answered_under_the_first_served_name_is_the_same_model(serve: Serve) -> None:
    """vLLM names its first --served-model-name in every chunk, whichever alias was asked: that is no other
    model, and a request judged only against its own name would fail every alias."""
    client = await serve(FakeVllmConfig(aliases=("gemma",)))
    result = await measure_stream(client, request(model="gemma", answer_names=frozenset({"gemma", "tiny-gemma"})))
    assert result.ok, result.failure
    assert result.model == "tiny-gemma"


@pytest.mark.parametrize(
    ("config", "expected_prompt", "words"),
    [
        # 0 completion tokens beside 5 text chunks: was 0 tok/s at 100% success.
        (FakeVllmConfig(usage_completion_tokens=0), None, "5 text chunks"),
        # 100,000 prompt tokens for a prompt the server counted as 64 when it was built.
        (FakeVllmConfig(usage_prompt_tokens=100_000), 64, "100000 prompt tokens"),
        (FakeVllmConfig(usage_prompt_tokens=1), 400, "1 prompt tokens"),
    ],
)
async def test_usage_the_stream_contradicts_is_malformed(
    serve: Serve, config: FakeVllmConfig, expected_prompt: int | None, words: str
) -> None:
    """Guards against usage taken at its word when the stream itself says otherwise: each text chunk carries at
    least one token, and the prompt's tokens were counted by the server when the prompt was built."""
    client = await serve(config)
    result = await measure_stream(client, request(expected_prompt_tokens=expected_prompt))
    assert result.failure is not None
    assert result.failure.kind is FailureKind.MALFORMED_STREAM
    assert words in result.failure.detail


async def test_usage_near_what_was_sent_is_accepted(serve: Serve) -> None:
    """The bounds must not catch an honest server: a template's few tokens either way are not "far"."""
    client = await serve(FakeVllmConfig(usage_prompt_tokens=80))
    result = await measure_stream(client, request(expected_prompt_tokens=64))
    assert result.ok, result.failure


async def test_no_text_at_all_is_empty_output(serve: Serve) -> None:
    """Guards against a model that answers nothing being counted as a fast success."""
    client = await serve(FakeVllmConfig(pieces=()))
    result = await measure_stream(client, request())
    assert result.failure is not None
    assert result.failure.kind is FailureKind.EMPTY_OUTPUT


async def test_no_retry_on_failure() -> None:
    """Guards against a retry hiding a 429 from the numbers: one measure, one request on the wire."""
    server = FakeVllm(FakeVllmConfig(status_sequences={CHAT_PATH: [429, 429]}))
    async with server, httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client:
        result = await measure_stream(client, request())
    assert result.failure is not None
    assert [r.path for r in server.requests] == [CHAT_PATH]


def test_aiohttp_connect_timeout_cause_is_a_connect_timeout() -> None:
    """Guards against aiohttp's connect timeout (surfacing as a bare httpx.TimeoutException through
    httpx-aiohttp) being reported as a read timeout; a real one cannot be provoked on 127.0.0.1."""
    error = httpx.TimeoutException("timed out")
    error.__cause__ = aiohttp.ConnectionTimeoutError("Connection timeout to host")
    assert classify_transport_error(error).kind is FailureKind.CONNECT_TIMEOUT
    assert classify_transport_error(httpx.ConnectTimeout("slow")).kind is FailureKind.CONNECT_TIMEOUT


class _SlowTerminatorServer(asyncio.Protocol):
    """Answers each request with a complete stream, but sends the chunked body's terminator a moment
    after ``[DONE]`` (as a real server's last TCP segment can arrive), counting connections."""

    connections = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        type(self).connections += 1
        self._transport = transport
        self._buffer = b""

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        head, sep, rest = self._buffer.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")),
            0,
        )
        if not sep or len(rest) < length:
            return
        self._buffer = rest[length:]
        events = [
            b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"length"}]}\n\n',
            b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n',
            b"data: [DONE]\n\n",
        ]
        body = b"".join(f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events)
        headers = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        self._transport.write(headers + body)
        asyncio.get_running_loop().call_later(0.05, self._transport.write, b"0\r\n\r\n")


async def test_connections_are_reused_after_done(transport_name: str) -> None:
    """Guards against closing a half-read response at [DONE]: the next request would then pay a new
    connection (a TLS handshake on Cloud Run) inside its TTFT."""
    _SlowTerminatorServer.connections = 0
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_SlowTerminatorServer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", transport=TRANSPORTS[transport_name]()) as c:
            results = [await measure_stream(c, request(), timeouts=FAST) for _ in range(3)]
    finally:
        server.close()
        await server.wait_closed()
    assert all(result.ok for result in results), [r.failure for r in results]
    assert _SlowTerminatorServer.connections == 1


def sse_body(*events: str) -> httpx.MockTransport:
    """A server answering every request with these SSE ``data:`` payloads (or raw lines, given as-is)."""
    lines = [event if event.startswith(("data:", ":", "<")) else f"data: {event}" for event in events]
    body = "\n\n".join(lines) + "\n\n"
    return httpx.MockTransport(
        lambda _request: httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    )


ROLE = '{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}'
TEXT = '{"choices": [{"index": 0, "delta": {"content": " hi"}, "finish_reason": "length"}]}'
USAGE = '{"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": %d}}'


@pytest.mark.parametrize(
    ("events", "kind", "detail"),
    [
        (
            ('{"id": "x", "output": {"text": "hi"}}', "[DONE]"),
            FailureKind.MALFORMED_STREAM,
            'not a completion chunk: {"id"',
        ),
        (('{"choices": [{"index": 0}]}', "[DONE]"), FailureKind.MALFORMED_STREAM, 'not a completion chunk: {"choices"'),
        (("<html>It works!</html>",), FailureKind.MALFORMED_STREAM, "not an SSE line: <html>"),
        ((ROLE, '{"object": "error", "message": "boom", "code": 500}'), FailureKind.STREAM_INTERRUPTED, "boom"),
        ((ROLE, TEXT, USAGE % 9, "[DONE]"), FailureKind.TOO_MANY_TOKENS, "usage says 9 completion tokens"),
        ((ROLE, TEXT, USAGE % 5, "[DONE]"), None, ""),
    ],
)
async def test_only_vllms_chunks_count_as_a_stream(
    events: tuple[str, ...], kind: FailureKind | None, detail: str
) -> None:
    """Guards against valid JSON of another shape, or a body that is not SSE, passing as "empty output"
    (explained as a chat-template problem), and against more tokens than max_tokens passing as a result."""
    async with httpx.AsyncClient(base_url="http://vllm.test", transport=sse_body(*events)) as client:
        result = await measure_stream(client, request())
    if kind is None:
        assert result.ok, result.failure
        return
    assert result.failure is not None
    assert result.failure.kind is kind
    assert detail in result.failure.detail


def test_the_default_deadline_grows_with_the_tokens_asked_for() -> None:
    """Guards against a fixed total deadline cutting long healthy answers, or none at all (a hang)."""
    assert default_deadline_s(32, 120.0) == 152.0
    assert default_deadline_s(2048, 120.0) == 120.0 + 2048 * SLOWEST_HEALTHY_TOKEN_S
