"""A local HTTP server on 127.0.0.1 that answers in vLLM 0.32's shapes, with faults on demand.

Why a real server and not only ``httpx.MockTransport``: the failures verify must explain happen on
sockets (refused connections, streams cut mid-way, chunk timing), and the aiohttp transport the CLI
uses only shows its real behaviour over one. Shapes follow a real `vllm serve` 0.32.0 (see
verify/responses.py); every behaviour is a field of ``FakeVllmConfig`` so a test states the one
fault it injects and nothing else.

Usage::

    async with FakeVllm(FakeVllmConfig(status_sequences={"/health": [503, 503]})) as server:
        ... server.url ...

A server that is "not started yet" (connection refused) is a ``FakeVllm(port=free_port())`` whose
``start()`` a test calls later, e.g. from an injected sleep.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Self

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from serving.vllm_metrics import recorded_metrics

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
# The prompt's token count, kept on the request between parsing it and streaming the usage chunk.
PROMPT_TOKENS = web.RequestKey("prompt_tokens", int)

# Bodies the platforms in front of vLLM send with their statuses (Google's front end, Cloud Run).
PLATFORM_BODIES: Mapping[int, str] = {
    401: "<html><head><title>401 Unauthorized</title></head><body><h1>Error: Unauthorized</h1>"
    "<h2>Your client does not have permission to the requested URL.</h2></body></html>",
    403: "<html><head><title>403 Forbidden</title></head><body><h1>Error: Forbidden</h1>"
    "<h2>Your client does not have permission to get URL from this server.</h2></body></html>",
    429: "Rate exceeded.",
    503: "Service Unavailable",
    504: "upstream request timeout",
}


@dataclass
class MetricsValues:
    """The numbers ``/metrics`` reports (one engine)."""

    running: float = 0.0
    waiting: float = 0.0
    kv_cache_usage: float = 0.0
    prefix_cache_queries: float = 0.0
    prefix_cache_hits: float = 0.0
    preemptions: float = 0.0
    prompt_tokens: float = 0.0
    generation_tokens: float = 0.0


@dataclass
class SpecDecodeValues:
    """Speculative-decoding counters; their presence is what "spec decode on" looks like."""

    drafts: float = 100.0
    draft_tokens: float = 300.0
    accepted_tokens: float = 210.0


@dataclass
class FakeVllmConfig:
    """Every behaviour of the fake, defaulting to a healthy vLLM 0.32 serving ``tiny-gemma``."""

    served_name: str = "tiny-gemma"
    # More --served-model-name values of the same weights: listed and accepted, and (as vLLM does) every answer
    # still names served_name, the first.
    aliases: tuple[str, ...] = ()
    # LoRA adapters vLLM has loaded: listed with served_name as their parent, answered under their own name.
    lora_adapters: tuple[str, ...] = ()
    version: str = "0.32.0"
    max_model_len: int = 2048
    # vLLM's --api-key: 401 {"error": "Unauthorized"} on /v1/* only (health and metrics stay open).
    api_key: str | None = None
    # A front end (Cloud Run IAM) refusing every path with this status, e.g. 401 or 403.
    front_door_status: int | None = None
    # Statuses answered, one per request, before a path behaves normally (e.g. {"/health": [503, 429]}).
    status_sequences: dict[str, list[int]] = field(default_factory=dict)
    # A path that answers this status forever (e.g. never ready: {"/health": 503}).
    always_status: dict[str, int] = field(default_factory=dict)
    # Generation: each piece is one streamed chunk; tokens come from usage, never from chunks.
    pieces: Sequence[str] = (" Hello", " from", " a", " fake", " server")
    tokens_per_piece: int = 1
    text_field: Literal["content", "reasoning"] = "content"
    finish_reason: str = "length"
    # Faults in the stream.
    cut_stream_after_chunks: int | None = None
    malformed_sse_after_chunks: int | None = None
    omit_usage: bool = False
    # Lies: the model the chunks name (None: served_name), and usage's token counts (None: the true ones).
    chunk_model: str | None = None
    usage_completion_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    # Timing: the wait before the first text chunk, then between text chunks (one value or one per gap).
    ttft_s: float = 0.0
    itl_s: float | Sequence[float] = 0.0
    # /metrics.
    metrics: MetricsValues = field(default_factory=MetricsValues)
    spec_decode: SpecDecodeValues | None = None
    metrics_body: str | None = None  # replaces the generated text entirely (malformed metrics)
    # Also every other family the recorded vLLM 0.32 exports (serving/data/vllm-0.32-metrics.json), at zero, but
    # those in drop_metrics (a release that renamed one): what `verify promote`'s metric gate reads.
    recorded_metrics: bool = False
    drop_metrics: frozenset[str] = frozenset()
    # Prompt tokens, for benchmarks: a toy tokenizer (one token per whitespace-separated word, plus
    # chat_template_tokens with the chat API) answers POST /tokenize and, with count_prompt_words,
    # usage.prompt_tokens (otherwise a fixed 13). tokenize_route=False: a server without /tokenize.
    count_prompt_words: bool = False
    # A reader of the prompt: the first group this pattern finds in it is streamed as the answer's first piece
    # (e.g. a model that finds the needle); None, or no match: the answer is ``pieces`` alone.
    answer_from_prompt: str | None = None
    # With answer_from_prompt: answer with what the request that many requests earlier held (a server that
    # mixes up its streams, or caches answers under the wrong key); 0: each its own.
    answer_lags_by: int = 0
    chat_template_tokens: int = 0
    tokenize_route: bool = True
    # "Connection: close" on every answer (a server or proxy without keep-alive): each request connects anew.
    close_connections: bool = False

    @property
    def output_tokens(self) -> int:
        return len(self.pieces) * self.tokens_per_piece

    def pieces_within(self, max_tokens: object) -> Sequence[str]:
        """The pieces vLLM would send for ``max_tokens``: it never generates more than asked."""
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            return self.pieces
        return self.pieces[: max(1, max_tokens // self.tokens_per_piece)]

    def gap_before(self, index: int) -> float:
        """Seconds to wait before text chunk ``index`` (0 = the first one, i.e. TTFT)."""
        if index == 0:
            return self.ttft_s
        if isinstance(self.itl_s, int | float):
            return float(self.itl_s)
        gaps = list(self.itl_s)
        return gaps[index - 1] if index - 1 < len(gaps) else 0.0


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: object | None


def free_port() -> int:
    """A port nothing listens on right now (for "connection refused" until a server starts there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class FakeVllm:
    """The server. ``config`` may be changed between requests by a test (e.g. to turn a fault off)."""

    def __init__(self, config: FakeVllmConfig | None = None, *, port: int = 0) -> None:
        self.config = config if config is not None else FakeVllmConfig()
        self.requests: list[SeenRequest] = []
        self._port = port
        self._runner: web.AppRunner | None = None
        self._sequences: dict[str, list[int]] = {}
        self._read: list[str | None] = []  # what answer_from_prompt found in each request, in arrival order

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    async def start(self) -> None:
        self._sequences = {path: list(statuses) for path, statuses in self.config.status_sequences.items()}
        app = web.Application(middlewares=self.middlewares())
        app.on_response_prepare.append(self._before_headers)
        app.router.add_get("/health", self._health)
        app.router.add_get("/ping", self._health)
        app.router.add_get("/version", self._version)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post(CHAT_PATH, self._chat)
        app.router.add_post(COMPLETIONS_PATH, self._completions)
        app.router.add_get("/metrics", self._metrics)
        if self.config.tokenize_route:
            app.router.add_post("/tokenize", self._tokenize)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port)
        await site.start()
        self._runner = runner
        address = runner.addresses[0]
        self._port = int(address[1])

    async def _before_headers(self, _request: web.Request, response: web.StreamResponse) -> None:
        if self.config.close_connections:
            # aiohttp calls this hook after it chose the Connection header, so set both.
            response.force_close()
            response.headers["Connection"] = "close"

    def middlewares(self) -> list[Middleware]:
        """Recording, a platform's front door, scripted statuses; subclasses add their own faults."""
        return [self._record, self._front_door, self._scripted_status]

    async def stop_listening(self) -> None:
        """Refuse new connections from now on (the accepted ones stay open), as a server that died."""
        if self._runner is not None:
            for site in list(self._runner.sites):
                await site.stop()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    # --- middlewares: recording, a platform's front door, scripted statuses ------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body: object | None = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", errors="replace")
        self.requests.append(SeenRequest(request.method, request.path, dict(request.headers), body))
        return await handler(request)

    @web.middleware
    async def _front_door(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        status = self.config.front_door_status
        if status is not None:
            return _platform_answer(status)
        key = self.config.api_key
        authorised = request.headers.get("Authorization") == f"Bearer {key}"
        if key is not None and request.path.startswith("/v1/") and not authorised:
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    @web.middleware
    async def _scripted_status(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in self.config.always_status:
            return _platform_answer(self.config.always_status[request.path])
        queue = self._sequences.get(request.path)
        if queue:
            return _platform_answer(queue.pop(0))
        return await handler(request)

    # --- routes --------------------------------------------------------------------------------------

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def _version(self, _request: web.Request) -> web.Response:
        return web.json_response({"version": self.config.version})

    async def _models(self, _request: web.Request) -> web.Response:
        created = int(time.time())
        cards: list[dict[str, object]] = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": "/models/fake",
                "parent": None,
                "max_model_len": self.config.max_model_len,
                "permission": [],
            }
            for name in (self.config.served_name, *self.config.aliases)
        ]
        cards += [
            {"id": name, "object": "model", "created": created, "owned_by": "vllm", "root": f"/adapters/{name}",
             "parent": self.config.served_name, "max_model_len": None, "permission": []}
            for name in self.config.lora_adapters
        ]  # fmt: skip
        return web.json_response({"object": "list", "data": cards})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _generate(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _openai_error(400, "BadRequestError", "Expecting value: line 1 column 1 (char 0)")
        model = body.get("model")
        if model not in (self.config.served_name, *self.config.aliases, *self.config.lora_adapters):
            return _openai_error(
                404,
                "NotFoundError",
                f"The model `{model}` does not exist. Valid aliases: {self.config.served_name}.",
                param="model",
            )
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens > self.config.max_model_len:
            return _openai_error(
                400,
                "BadRequestError",
                f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum "
                f"context length is {self.config.max_model_len} tokens.",
                param="max_tokens",
            )
        if body.get("stream"):
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            request[PROMPT_TOKENS] = self._prompt_tokens(body, chat=chat)
            pieces = self._read_from_prompt(body) + list(self.config.pieces_within(max_tokens))
            # vLLM names an adapter's answers after the adapter, every other after its first served name.
            answering = model if model in self.config.lora_adapters else self.config.served_name
            return await self._stream(request, pieces, chat=chat, include_usage=include_usage, answering=answering)
        total_wait = sum(self.config.gap_before(i) for i in range(len(self.config.pieces)))
        if total_wait:
            await asyncio.sleep(total_wait)
        return web.json_response(self._full_answer(chat=chat, prompt_tokens=self._prompt_tokens(body, chat=chat)))

    def _full_answer(self, *, chat: bool, prompt_tokens: int = 13) -> dict[str, object]:
        cfg = self.config
        text = "".join(cfg.pieces)
        choice: dict[str, object]
        if chat:
            message: dict[str, object] = {
                "role": "assistant",
                "content": text if cfg.text_field == "content" else "",
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": [],
                "reasoning": text if cfg.text_field == "reasoning" else None,
            }
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": cfg.finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": cfg.finish_reason}
        return {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": cfg.served_name,
            "choices": [choice],
            "system_fingerprint": f"vllm-{cfg.version}-fake",
            "usage": None if cfg.omit_usage else self._usage(prompt_tokens),
        }

    def _read_from_prompt(self, body: dict[str, object]) -> list[str]:
        if self.config.answer_from_prompt is None:
            return []
        messages = body.get("messages")
        listed = messages if isinstance(messages, list) else []
        text = " ".join(str(m.get("content")) for m in listed if isinstance(m, dict)) + str(body.get("prompt", ""))
        found = re.search(self.config.answer_from_prompt, text)
        self._read.append(None if found is None else found.group(1))
        lag = self.config.answer_lags_by
        answer = self._read[-1 - lag] if len(self._read) > lag else None
        return [] if answer is None else [f" {answer}"]

    def _prompt_tokens(self, body: dict[str, object], *, chat: bool) -> int:
        return self.toy_token_count(body, chat=chat) if self.config.count_prompt_words else 13

    def toy_token_count(self, body: dict[str, object], *, chat: bool) -> int:
        """One token per word of the prompt (or of every message, plus the chat template's tokens)."""
        messages = body.get("messages")
        if chat or isinstance(messages, list):
            listed = messages if isinstance(messages, list) else []
            contents = [m.get("content") for m in listed if isinstance(m, dict)]
            words = sum(len(str(content).split()) for content in contents if content is not None)
            return words + self.config.chat_template_tokens
        return len(str(body.get("prompt", "")).split())

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        count = self.toy_token_count(body, chat="messages" in body)
        answer = {"count": count, "max_model_len": self.config.max_model_len, "tokens": list(range(count))}
        return web.json_response({**answer, "token_strs": None})

    def _usage(self, prompt: int = 13, pieces: Sequence[str] | None = None) -> dict[str, int]:
        sent = self.config.pieces if pieces is None else pieces
        completion = len(sent) * self.config.tokens_per_piece
        if self.config.usage_completion_tokens is not None:
            completion = self.config.usage_completion_tokens
        if self.config.usage_prompt_tokens is not None:
            prompt = self.config.usage_prompt_tokens
        return {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}

    async def _stream(
        self, request: web.Request, pieces: Sequence[str], *, chat: bool, include_usage: bool, answering: str
    ) -> web.StreamResponse:
        cfg = self.config
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
        await response.prepare(request)
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:16]}"

        async def send(payload: object) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            await response.write(f"data: {data}\n\n".encode())

        def chunk(piece: str | None, finish: str | None) -> dict[str, object]:
            choice: dict[str, object] = {"index": 0, "logprobs": None, "finish_reason": finish}
            if chat:
                choice["delta"] = {"role": "assistant", "content": ""} if piece is None else {cfg.text_field: piece}
            else:
                choice["text"] = piece or ""
            kind = "chat.completion.chunk" if chat else "text_completion"
            return {
                "id": ident,
                "object": kind,
                "created": int(time.time()),
                "model": cfg.chunk_model or answering,
                "choices": [choice],
            }

        if chat:
            await send(chunk(None, None))
        for index, piece in enumerate(pieces):
            if cfg.cut_stream_after_chunks is not None and index >= cfg.cut_stream_after_chunks:
                _cut_connection(request)
                return response
            if cfg.malformed_sse_after_chunks is not None and index == cfg.malformed_sse_after_chunks:
                await send('{"id": "broken", "choices": [')
            gap = cfg.gap_before(index)
            if gap:
                await asyncio.sleep(gap)
            last = index == len(pieces) - 1
            await send(chunk(piece, cfg.finish_reason if last else None))
        if not pieces:
            await send(chunk("", "stop"))
        if include_usage and not cfg.omit_usage:
            usage_chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": self._usage(request[PROMPT_TOKENS], pieces),
            }
            await send(usage_chunk)
        await send("[DONE]")
        await response.write_eof()
        return response

    async def _metrics(self, _request: web.Request) -> web.Response:
        text = self.config.metrics_body if self.config.metrics_body is not None else metrics_text(self.config)
        return web.Response(text=text, content_type="text/plain", charset="utf-8")


def _cut_connection(request: web.Request) -> None:
    """Drop the socket mid-response: the client sees a chunked body that never finishes."""
    transport = request.transport
    if transport is not None:
        transport.abort()


def _platform_answer(status: int) -> web.Response:
    body = PLATFORM_BODIES.get(status, f"status {status}")
    content_type = "text/html" if body.startswith("<html>") else "text/plain"
    return web.Response(status=status, text=body, content_type=content_type)


def _openai_error(status: int, kind: str, message: str, *, param: str | None = None) -> web.Response:
    error = {"message": message, "type": kind, "param": param, "code": status}
    return web.json_response({"error": error}, status=status)


def metrics_text(config: FakeVllmConfig) -> str:
    """Prometheus text as vLLM 0.32 writes it: HELP/TYPE lines, engine and model_name labels, and each
    counter as a ``_total`` counter followed by a ``_created`` gauge (as recorded from a real server)."""
    labels = f'engine="0",model_name="{config.served_name}"'
    created = f"{time.time():.6e}"
    values = config.metrics
    lines: list[str] = []

    def gauge(name: str, value: float, help_text: str) -> None:
        lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {value!r}"])

    def counter(name: str, value: float, help_text: str) -> None:
        lines.extend(
            [
                f"# HELP {name}_total {help_text}",
                f"# TYPE {name}_total counter",
                f"{name}_total{{{labels}}} {value!r}",
                f"# HELP {name}_created {help_text}",
                f"# TYPE {name}_created gauge",
                f"{name}_created{{{labels}}} {created}",
            ]
        )

    lines.extend(
        [
            "# HELP python_gc_objects_collected_total Objects collected during gc",
            "# TYPE python_gc_objects_collected_total counter",
            'python_gc_objects_collected_total{generation="0"} 14899.0',
        ]
    )
    gauge("vllm:num_requests_running", values.running, "Number of requests in model execution batches.")
    gauge("vllm:num_requests_waiting", values.waiting, "Number of requests waiting to be processed.")
    gauge("vllm:kv_cache_usage_perc", values.kv_cache_usage, "KV-cache usage. 1 means 100 percent usage.")
    counter("vllm:prefix_cache_queries", values.prefix_cache_queries, "Prefix cache queries, in tokens.")
    counter("vllm:prefix_cache_hits", values.prefix_cache_hits, "Prefix cache hits, in tokens.")
    counter("vllm:num_preemptions", values.preemptions, "Cumulative number of preemption from the engine.")
    counter("vllm:prompt_tokens", values.prompt_tokens, "Number of prefill tokens processed.")
    counter("vllm:generation_tokens", values.generation_tokens, "Number of generation tokens processed.")
    if config.spec_decode is not None:
        spec = config.spec_decode
        counter("vllm:spec_decode_num_drafts", spec.drafts, "Number of spec decoding drafts.")
        counter("vllm:spec_decode_num_draft_tokens", spec.draft_tokens, "Number of draft tokens.")
        counter("vllm:spec_decode_num_accepted_tokens", spec.accepted_tokens, "Number of accepted tokens.")
    lines.extend(
        [
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="0.1"}} 1.0',
            f'vllm:time_to_first_token_seconds_bucket{{{labels},le="+Inf"}} 1.0',
            f"vllm:time_to_first_token_seconds_count{{{labels}}} 1.0",
            f"vllm:time_to_first_token_seconds_sum{{{labels}}} 0.05",
        ]
    )
    if config.recorded_metrics:
        lines += _recorded_families(labels, {line.split()[2] for line in lines if line.startswith("# TYPE ")})
    text = "\n".join(lines) + "\n"
    for name in config.drop_metrics:
        text = "\n".join(line for line in text.split("\n") if not line.startswith((name + "{", name + " "))) + "\n"
    return text


def _recorded_families(labels: str, written: set[str]) -> list[str]:
    """Zero-valued samples of each recorded family not written yet (engine families with their labels)."""
    lines: list[str] = []
    for family in recorded_metrics().families.values():
        if family.name.endswith("_created") or family.name in written or f"{family.name}_total" in written:
            continue
        own = labels if "engine" in family.labels else ""
        if "finished_reason" in family.labels:
            own += ',finished_reason="stop"'
        if "status" in family.labels:
            own = 'handler="/v1/chat/completions",method="POST",status="2xx"'
        lines.append(f"# TYPE {family.name} {family.type}")
        for sample in family.samples:
            extra = f'{own},le="+Inf"' if sample.endswith("_bucket") else own
            lines.append(f"{sample}{{{extra.strip(',')}}} 0.0")
    return lines
