"""A local vLLM-shaped streaming server whose latencies are set by arguments: the truth to measure against.

Why: a benchmark client is only proven accurate against a server whose real timings are known. This
server streams every completion on a schedule fixed when the request arrives (TTFT ``--ttft-ms``,
then one token every ``--itl-ms``), each write scheduled against its absolute deadline (no drift from
chained sleeps), and records per request when it *really* wrote the first and the last token. Those
records, not the arguments, are the truth: if the server itself runs late, the truth says so.

The server must never be the bottleneck of the measurement, so it runs ``--workers`` processes, each
with its own event loop and its own ``SO_REUSEPORT`` listening socket on the same port (the kernel
spreads connections over them). The records live in shared memory created before the workers fork,
so any worker answers ``GET /stats`` for all of them.

Endpoints (what ``verify bench`` and ``verify health`` use):

- ``POST /v1/chat/completions`` and ``POST /v1/completions``: streamed (role chunk with the first
  token, ``max_tokens`` content chunks, the last with ``finish_reason``, a ``usage`` chunk, ``[DONE]``).
- ``GET /v1/models`` (with ``max_model_len``), ``GET /version``, ``GET /health``, ``GET /metrics``.
- ``POST /tokenize``: one token per whitespace-separated word (plus a fixed chat-template overhead for
  ``messages``), so ``verify bench`` calibrates prompts exactly against this server's own count.
- ``GET /stats``: the records' means as JSON (``?raw=1`` adds every record: arrival, first write, last
  write, tokens, in seconds of the system's monotonic clock, the clock ``verify`` times with);
  ``POST /stats/reset`` forgets them.

Usage::

    taskset -c 0 python -m benchmarks.scripted_server --port 8200 --ttft-ms 100 --itl-ms 10 --workers 2

It prints one JSON line (``{"url": ..., "workers": ...}``) once every worker listens; binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import multiprocessing.sharedctypes
import os
import resource
import signal
import socket
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Semaphore
from typing import Any
from urllib.parse import parse_qs, urlsplit

from benchmarks.instant_server import next_request

# Fields per record in shared memory: arrival, first write, last write, tokens, first-write lateness.
RECORD_FIELDS = 5
DEFAULT_CAPACITY = 200_000
CHAT_TEMPLATE_TOKENS = 8  # what /tokenize adds for ``messages``, like a real chat template would


@dataclass(frozen=True, slots=True)
class Schedule:
    """When each token of a stream is due, relative to the request's arrival."""

    ttft_s: float
    itl_s: float

    def deadline(self, arrival: float, token_index: int) -> float:
        return arrival + self.ttft_s + token_index * self.itl_s


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """One finished stream as the server wrote it (monotonic seconds)."""

    arrival: float
    first_write: float
    last_write: float
    tokens: int
    first_lateness: float

    @property
    def ttft_s(self) -> float:
        return self.first_write - self.arrival

    @property
    def tpot_s(self) -> float | None:
        return None if self.tokens < 2 else (self.last_write - self.first_write) / (self.tokens - 1)


class RecordStore:
    """Per-worker record arrays in shared memory (created before fork, so every worker sees all)."""

    def __init__(self, workers: int, capacity: int) -> None:
        self.capacity = capacity
        self._arrays = [multiprocessing.sharedctypes.RawArray("d", capacity * RECORD_FIELDS) for _ in range(workers)]
        self._counts = [multiprocessing.sharedctypes.RawValue("q", 0) for _ in range(workers)]
        self._dropped = [multiprocessing.sharedctypes.RawValue("q", 0) for _ in range(workers)]

    def add(self, worker: int, record: ServerRecord) -> None:
        count = self._counts[worker]
        if count.value >= self.capacity:
            self._dropped[worker].value += 1
            return
        base = count.value * RECORD_FIELDS
        array = self._arrays[worker]
        array[base : base + RECORD_FIELDS] = [
            record.arrival,
            record.first_write,
            record.last_write,
            float(record.tokens),
            record.first_lateness,
        ]
        count.value += 1

    def records(self) -> list[ServerRecord]:
        found: list[ServerRecord] = []
        for array, count in zip(self._arrays, self._counts, strict=True):
            values = array[: count.value * RECORD_FIELDS]
            for base in range(0, len(values), RECORD_FIELDS):
                arrival, first, last, tokens, late = values[base : base + RECORD_FIELDS]
                found.append(ServerRecord(arrival, first, last, int(tokens), late))
        return sorted(found, key=lambda record: record.arrival)

    def dropped(self) -> int:
        return sum(value.value for value in self._dropped)

    def reset(self) -> None:
        for count in (*self._counts, *self._dropped):
            count.value = 0


def summarize(records: Sequence[ServerRecord]) -> dict[str, float | int | None]:
    """Means of what was really written, and the request rate over the span the records cover."""
    if not records:
        return {"requests": 0}
    tpots = [tpot for tpot in (r.tpot_s for r in records) if tpot is not None]
    span = max(r.last_write for r in records) - min(r.arrival for r in records)
    return {
        "requests": len(records),
        "mean_ttft_ms": statistics.fmean(r.ttft_s for r in records) * 1000.0,
        "mean_tpot_ms": statistics.fmean(tpots) * 1000.0 if tpots else None,
        "mean_e2el_ms": statistics.fmean(r.last_write - r.arrival for r in records) * 1000.0,
        "request_throughput": len(records) / span if span > 0 else None,
        "max_first_lateness_ms": max(r.first_lateness for r in records) * 1000.0,
        "span_s": span,
    }


# --- the wire ---------------------------------------------------------------------------------------


def http_chunk(event: bytes) -> bytes:
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


def sse(payload: object) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return http_chunk(f"data: {data}\n\n".encode())


def json_response(payload: object, status: str = "200 OK") -> bytes:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def text_response(body: str, status: str = "200 OK") -> bytes:
    data = body.encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {len(data)}\r\n\r\n"
    return head.encode() + data


STREAM_HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
)


class StreamShape:
    """The precomputed chunks of one API's stream (only the usage numbers vary per request)."""

    def __init__(self, *, chat: bool, model: str) -> None:
        kind = "chat.completion.chunk" if chat else "text_completion"
        self._base: dict[str, object] = {"id": "cmpl-scripted", "object": kind, "created": 0, "model": model}
        self._chat = chat
        role = self._choice({"role": "assistant", "content": ""}, None, "")
        self.token = sse(self._choice({"content": " w"}, None, " w"))
        # vLLM's chat stream opens with a role-only chunk; its completions stream does not.
        self.first = (sse(role) if chat else b"") + self.token
        self.last = sse(self._choice({"content": " w"}, "length", " w"))

    def _choice(self, delta: dict[str, str], finish: str | None, text: str) -> dict[str, object]:
        choice: dict[str, object] = {"index": 0, "logprobs": None, "finish_reason": finish}
        if self._chat:
            choice["delta"] = delta
        else:
            choice["text"] = text
        return {**self._base, "choices": [choice]}

    def ending(self, prompt_tokens: int, tokens: int) -> bytes:
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens, "total_tokens": prompt_tokens + tokens}
        return sse({**self._base, "choices": [], "usage": usage}) + sse("[DONE]") + b"0\r\n\r\n"


def count_tokens(body: dict[str, Any]) -> int:
    """This server's tokenizer: a token per word, plus a chat template's overhead for ``messages``."""
    messages = body.get("messages")
    if isinstance(messages, list):
        words = sum(len(str(message.get("content", "")).split()) for message in messages if isinstance(message, dict))
        return words + CHAT_TEMPLATE_TOKENS
    return len(str(body.get("prompt", "")).split())


@dataclass(frozen=True, slots=True)
class ServerConfig:
    model: str
    max_model_len: int
    schedule: Schedule


class ScriptedProtocol(asyncio.Protocol):
    """One connection: HTTP/1.1 keep-alive, one request at a time (clients do not pipeline streams)."""

    def __init__(self, config: ServerConfig, store: RecordStore, worker: int, shapes: dict[bool, StreamShape]) -> None:
        self._config = config
        self._store = store
        self._worker = worker
        self._shapes = shapes
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._streaming = False
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._next_request()

    def _next_request(self) -> None:
        while not self._streaming and self._transport is not None:
            request = next_request(self._buffer)
            if request is None:
                return
            head, body, self._buffer = request
            method, _, rest = head.partition(" ")
            self._answer(method, rest.partition(" ")[0], body)

    def _answer(self, method: str, target: str, body: bytes) -> None:
        assert self._transport is not None
        url = urlsplit(target)
        path = url.path
        if method == "POST" and path in {"/v1/chat/completions", "/v1/completions"}:
            self._stream(json.loads(body or b"{}"), chat=path.endswith("chat/completions"))
            return
        self._transport.write(self._static(method, path, body, parse_qs(url.query)))

    def _static(self, method: str, path: str, body: bytes, query: dict[str, list[str]]) -> bytes:
        config = self._config
        simple = {
            ("GET", "/health"): lambda: text_response(""),
            ("GET", "/version"): lambda: json_response({"version": "scripted"}),
            ("GET", "/v1/models"): lambda: json_response(
                {
                    "object": "list",
                    "data": [{"id": config.model, "object": "model", "max_model_len": config.max_model_len}],
                }
            ),
            ("POST", "/tokenize"): lambda: self._tokenize(body),
            ("GET", "/metrics"): self._metrics,
            ("GET", "/stats"): lambda: self._stats(raw=query.get("raw", ["0"])[0] == "1"),
            ("POST", "/stats/reset"): self._reset,
        }
        answer = simple.get((method, path))
        if answer is None:
            return json_response({"error": f"no route {method} {path}"}, "404 Not Found")
        return answer()

    def _tokenize(self, body: bytes) -> bytes:
        count = count_tokens(json.loads(body or b"{}"))
        return json_response({"count": count, "max_model_len": self._config.max_model_len, "tokens": [0] * count})

    def _metrics(self) -> bytes:
        done = len(self._store.records())
        return text_response(
            "# TYPE vllm:request_success_total counter\n"
            f'vllm:request_success_total{{model_name="{self._config.model}",finished_reason="length"}} {done}\n'
        )

    def _stats(self, *, raw: bool) -> bytes:
        records = self._store.records()
        stats: dict[str, object] = {**summarize(records), "dropped": self._store.dropped()}
        if raw:
            stats["records"] = [[r.arrival, r.first_write, r.last_write, r.tokens, r.first_lateness] for r in records]
        return json_response(stats)

    def _reset(self) -> bytes:
        self._store.reset()
        return json_response({"reset": True})

    def _stream(self, body: dict[str, Any], *, chat: bool) -> None:
        assert self._transport is not None
        arrival = self._loop.time()
        tokens = max(int(body.get("max_tokens") or 16), 1)
        prompt_tokens = count_tokens(body)
        self._streaming = True
        self._transport.write(STREAM_HEADERS)
        _Stream(self, self._shapes[chat], arrival, tokens, prompt_tokens).start()

    def finished(self, record: ServerRecord) -> None:
        self._store.add(self._worker, record)
        self._streaming = False
        if self._buffer:
            self._next_request()

    def write(self, data: bytes) -> bool:
        if self._transport is None or self._transport.is_closing():
            return False
        self._transport.write(data)
        return True

    @property
    def schedule(self) -> Schedule:
        return self._config.schedule


class _Stream:
    """One response's writes, each at its absolute deadline (a late write never delays the next one's)."""

    __slots__ = ("_arrival", "_first_lateness", "_first_write", "_index", "_owner", "_prompt", "_shape", "_tokens")

    def __init__(self, owner: ScriptedProtocol, shape: StreamShape, arrival: float, tokens: int, prompt: int) -> None:
        self._owner = owner
        self._shape = shape
        self._arrival = arrival
        self._tokens = tokens
        self._prompt = prompt
        self._index = 0
        self._first_write = 0.0
        self._first_lateness = 0.0

    def start(self) -> None:
        asyncio.get_running_loop().call_at(self._owner.schedule.deadline(self._arrival, 0), self._emit)

    def _emit(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        last = self._index == self._tokens - 1
        if self._index == 0:
            self._first_write = now
            self._first_lateness = now - self._owner.schedule.deadline(self._arrival, 0)
            data = self._shape.first if not last else self._shape.first.replace(self._shape.token, self._shape.last)
        else:
            data = self._shape.last if last else self._shape.token
        if last:
            data += self._shape.ending(self._prompt, self._tokens)
        if not self._owner.write(data):
            return  # the client went away: nothing to record
        if last:
            record = ServerRecord(self._arrival, self._first_write, now, self._tokens, self._first_lateness)
            self._owner.finished(record)
            return
        self._index += 1
        loop.call_at(self._owner.schedule.deadline(self._arrival, self._index), self._emit)


# --- processes --------------------------------------------------------------------------------------


def listening_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    return sock


async def serve_worker(config: ServerConfig, store: RecordStore, worker: int, port: int, ready: Semaphore) -> None:
    sock = listening_socket(port)
    sock.listen(4096)
    loop = asyncio.get_running_loop()
    shapes = {True: StreamShape(chat=True, model=config.model), False: StreamShape(chat=False, model=config.model)}
    server = await loop.create_server(lambda: ScriptedProtocol(config, store, worker, shapes), sock=sock)
    ready.release()
    async with server:
        await server.serve_forever()


def _worker_main(config: ServerConfig, store: RecordStore, worker: int, port: int, ready: Semaphore) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops workers with SIGTERM
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_worker(config, store, worker, port, ready))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--ttft-ms", type=float, default=100.0, help="time to the first token (default 100)")
    parser.add_argument("--itl-ms", type=float, default=10.0, help="gap between tokens (default 10)")
    parser.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument("--capacity", type=int, default=DEFAULT_CAPACITY, help="records kept per worker")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.ttft_ms < 0 or args.itl_ms < 0:
        parser.error("--workers must be >= 1 and --ttft-ms/--itl-ms >= 0")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # Hold the port (SO_REUSEPORT, not listening) so the workers can all bind it.
    holder = listening_socket(args.port)
    port = holder.getsockname()[1]
    config = ServerConfig(args.model, args.max_model_len, Schedule(args.ttft_ms / 1000.0, args.itl_ms / 1000.0))
    context = multiprocessing.get_context("fork")
    store = RecordStore(args.workers, args.capacity)
    ready = context.Semaphore(0)
    workers = [
        context.Process(target=_worker_main, args=(config, store, index, port, ready), daemon=True)
        for index in range(args.workers)
    ]
    for process in workers:
        process.start()
    for _ in workers:
        ready.acquire()
    holder.close()
    print(json.dumps({"url": f"http://127.0.0.1:{port}", "workers": args.workers, "pid": os.getpid()}), flush=True)
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop and all(process.is_alive() for process in workers):
        time.sleep(0.2)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
