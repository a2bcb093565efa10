"""A vLLM that misbehaves on purpose, and a way to serve it to the CLI under test.

Why: verify must never hang, never print a traceback, and never lose or fake a measured cell,
whatever the server does. tests/fake_vllm.py covers the common faults (statuses, 429/503 bursts, cut
streams, stalls); ``FaultyVllm`` adds the ones that found real bugs:

- a stream that never ends: text chunks forever (only ``max_tokens`` can stop it) or SSE comments
  forever (only the total deadline can);
- silence after the last token without closing the connection, before or after ``data: [DONE]``;
- valid JSON in the wrong shape, on the chat endpoint, streamed or not;
- a body that is not JSON at all (an HTML page, as a proxy or another service sends) on any path;
- dying between two cells: after the N-th generation request it stops accepting connections, as a
  crashed or restarted server does, and a new ``FaultyVllm`` on the same port brings it back.

Each fault is one field of ``Faults``, so a test states the one it injects.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from tests.fake_vllm import CHAT_PATH, COMPLETIONS_PATH, FakeVllm, FakeVllmConfig

NOT_JSON_BODY = "<html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>"
_GENERATION_PATHS = (CHAT_PATH, COMPLETIONS_PATH)


@dataclass
class Faults:
    """What goes wrong; everything else behaves as ``FakeVllm`` does."""

    endless_stream: Literal["text", "comments"] | None = None
    silent_after_last_token: Literal["before_done", "after_done"] | None = None
    wrong_schema: bool = False
    not_json: frozenset[str] = field(default_factory=frozenset)
    # Stop accepting connections once this many generation requests have arrived (the last is served).
    die_after_generations: int | None = None


class FaultyVllm(FakeVllm):
    def __init__(self, faults: Faults, config: FakeVllmConfig | None = None, *, port: int = 0) -> None:
        base = config if config is not None else FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3)
        if faults.die_after_generations is not None:
            # Without keep-alive every request connects anew, so after the death none can get through.
            base.close_connections = True
        super().__init__(base, port=port)
        self.faults = faults
        self.generations = 0

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def middlewares(self) -> list[Middleware]:
        record, *rest = super().middlewares()
        return [record, self._faults, *rest]

    @web.middleware
    async def _faults(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        faults = self.faults
        if request.path in faults.not_json:
            return web.Response(text=NOT_JSON_BODY, content_type="text/html")
        if request.path not in _GENERATION_PATHS:
            return await handler(request)
        self.generations += 1
        if faults.die_after_generations is not None and self.generations >= faults.die_after_generations:
            await self.stop_listening()
        body = json.loads(await request.read())
        if faults.wrong_schema:
            return await self._wrong_schema(request, streamed=bool(body.get("stream")))
        if body.get("stream") and (faults.endless_stream or faults.silent_after_last_token):
            return await self._misbehaving_stream(request, body)
        return await handler(request)

    async def _wrong_schema(self, request: web.Request, *, streamed: bool) -> web.StreamResponse:
        """Valid JSON, not OpenAI's shape: what another service's API (or a broken proxy) answers."""
        if not streamed:
            return web.json_response({"result": {"text": "Hello"}, "status": "ok"})
        response = await _sse(request)
        for word in (" Hello", " there"):
            await _send(response, {"id": "x", "output": {"text": word}})
        await _send(response, "[DONE]")
        await response.write_eof()
        return response

    async def _misbehaving_stream(self, request: web.Request, body: dict[str, object]) -> web.StreamResponse:
        response = await _sse(request)
        ident = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        if self.faults.endless_stream == "comments":
            while True:  # a keep-alive comment forever: never text, never an end
                await response.write(b": keep-alive\n\n")
                await asyncio.sleep(0.01)
        if self.faults.endless_stream == "text":
            while True:  # one token per chunk forever, whatever max_tokens asked for
                await _send(response, _chunk(ident, " tok", None))
                await asyncio.sleep(0.001)
        pieces = self.config.pieces_within(body.get("max_tokens"))
        for index, piece in enumerate(pieces):
            await _send(response, _chunk(ident, piece, "length" if index == len(pieces) - 1 else None))
        usage = {"prompt_tokens": 13, "completion_tokens": len(pieces), "total_tokens": 13 + len(pieces)}
        await _send(response, {"id": ident, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        if self.faults.silent_after_last_token == "after_done":
            await _send(response, "[DONE]")
        await asyncio.Event().wait()  # silent, the connection open, until the client gives up
        return response


async def _sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
    await response.prepare(request)
    return response


async def _send(response: web.StreamResponse, payload: object) -> None:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    await response.write(f"data: {data}\n\n".encode())


def _chunk(ident: str, piece: str, finish: str | None) -> dict[str, object]:
    choice = {"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": finish}
    return {"id": ident, "object": "chat.completion.chunk", "model": "tiny-gemma", "choices": [choice]}


_Server = TypeVar("_Server", bound=FakeVllm)


class ServerThread:
    """An event loop in a thread, for servers the synchronous CLI under test (``verify.cli.main``)
    talks to: the CLI runs its own loop with ``asyncio.run``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def start(self, server: _Server) -> _Server:
        asyncio.run_coroutine_threadsafe(server.start(), self.loop).result(10)
        return server

    def stop(self, server: FakeVllm) -> None:
        asyncio.run_coroutine_threadsafe(server.stop(), self.loop).result(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """``server`` running in its own thread for the duration of the block."""
    thread = ServerThread()
    try:
        yield thread.start(server)
    finally:
        thread.stop(server)
        thread.close()
