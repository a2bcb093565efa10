"""A local server that answers every POST with a fixed vLLM-shaped stream, instantly.

Why: to measure a load generator, the server must cost (almost) nothing, so that every millisecond
and every missing request per second is the client's. One asyncio process, raw protocol, HTTP/1.1
keep-alive, the whole response precomputed and written in one call: a role chunk, ``--chunks``
content chunks (the last with ``finish_reason``), a usage chunk and ``[DONE]``, chunked encoding.
It never parses the JSON body; ``GET /v1/models`` answers for clients that ask.

Usage: ``python benchmarks/instant_server.py --port 8100 [--chunks 32]`` (binds 127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource

HEADER_END = b"\r\n\r\n"


def _sse(payload: object) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    event = f"data: {data}\n\n".encode()
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


def stream_response(chunks: int, *, model: str = "tiny-gemma") -> bytes:
    """The full HTTP response: headers, then each SSE event as one HTTP chunk."""
    base = {"id": "chatcmpl-instant", "object": "chat.completion.chunk", "created": 0, "model": model}

    def choice(delta: dict[str, str], finish: str | None) -> dict[str, object]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    body = _sse(choice({"role": "assistant", "content": ""}, None))
    for index in range(chunks):
        body += _sse(choice({"content": f" w{index}"}, "length" if index == chunks - 1 else None))
    usage = {"prompt_tokens": 16, "completion_tokens": chunks, "total_tokens": 16 + chunks}
    body += _sse({**base, "choices": [], "usage": usage})
    body += _sse("[DONE]") + b"0\r\n\r\n"
    headers = (
        "HTTP/1.1 200 OK\r\n"
        "content-type: text/event-stream; charset=utf-8\r\n"
        "transfer-encoding: chunked\r\n"
        "connection: keep-alive\r\n\r\n"
    )
    return headers.encode() + body


def models_response(model: str) -> bytes:
    body = json.dumps({"object": "list", "data": [{"id": model, "object": "model", "max_model_len": 2048}]}).encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def next_request(buffer: bytes) -> tuple[str, bytes, bytes] | None:
    """The first complete HTTP/1.1 request in ``buffer``: (request head, body, what follows), or None."""
    end = buffer.find(HEADER_END)
    if end < 0:
        return None
    head = buffer[:end].decode("latin-1")
    length = 0
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    total = end + len(HEADER_END) + length
    if len(buffer) < total:
        return None
    return head, buffer[end + len(HEADER_END) : total], buffer[total:]


class InstantProtocol(asyncio.Protocol):
    def __init__(self, stream: bytes, models: bytes) -> None:
        self._stream = stream
        self._models = models
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (request := next_request(self._buffer)) is not None:
            head, _, self._buffer = request
            assert self._transport is not None
            self._transport.write(self._models if head.startswith("GET") else self._stream)


async def serve(port: int, chunks: int, model: str) -> None:
    stream, models = stream_response(chunks, model=model), models_response(model)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: InstantProtocol(stream, models), "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description="Instant vLLM-shaped streaming server on 127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--model", default="tiny-gemma")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"instant server on 127.0.0.1:{args.port} (open files {soft} -> {hard})", flush=True)
    asyncio.run(serve(args.port, args.chunks, args.model))


if __name__ == "__main__":
    main()
