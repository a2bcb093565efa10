"""A local stand-in for Google's REST APIs on 127.0.0.1: routes answer with the fixtures' bodies.

Why a real HTTP server rather than httpx.MockTransport: the ops commands are pointed at it the way a user
would point them at an emulator (`VERIFY_GOOGLE_API_ROOT`, plain HTTP), so URL building, query encoding,
auth headers and error parsing are all exercised. Paths are `/<api>/<version>/...`, the default root with
its host's first label as prefix (see remote/google_client.py `_rebase`).

Routes are (method, path regex) -> handler(match, query, body) -> (status, body); a later route for the
same request wins, so a test states only what differs from the all-clear scenario. Every request is
recorded, so tests can assert the commands only read.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from tests.verify.threaded_server import serving_in_thread

FIXTURES = Path(__file__).parent / "fixtures"
TOKEN = "fake-access-token"

Body = dict[str, Any]
# A handler answers a JSON body, or plain text (a Kubernetes container log).
Handler = Callable[[re.Match[str], dict[str, list[str]], Body], tuple[int, Body | str]]


def fixture(name: str) -> Body:
    data: Body = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def fixture_text(name: str, **replace: str) -> Body:
    """A fixture with placeholder words (ZONE, METRIC, ...) replaced."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    for key, value in replace.items():
        text = text.replace(key, value)
    data: Body = json.loads(text)
    return data


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Body
    authorization: str | None


@dataclass
class FakeGoogle:
    routes: list[tuple[str, re.Pattern[str], Handler]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _running: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def route(self, method: str, pattern: str, answer: Handler | Body | str, status: int = 200) -> None:
        if callable(answer):
            handler = answer
        else:
            fixed = answer

            def handler(_m: re.Match[str], _q: dict[str, list[str]], _b: Body) -> tuple[int, Body | str]:
                return status, fixed

        self.routes.append((method, re.compile(pattern), handler))

    def fail(self, method: str, pattern: str, error_fixture: str, status: int = 403) -> None:
        self.route(method, pattern, fixture(error_fixture), status=status)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        fake = self

        class RequestHandler(BaseHTTPRequestHandler):
            # Keep-alive, as Google's front ends: a command's calls share one connection (every answer has a length).
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart

            def log_message(self, *_args: object) -> None:
                return

            def _answer(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                query = parse_qs(parts.query)
                fake.seen.append(Seen(self.command, parts.path, query, body, self.headers.get("Authorization")))
                status, answer = 404, _not_found(parts.path)  # type: tuple[int, Body | str]
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    status, answer = 401, {"error": {"code": 401, "message": "no token", "status": "UNAUTHENTICATED"}}
                else:
                    for method, pattern, handler in reversed(fake.routes):
                        found = pattern.fullmatch(parts.path)
                        if method == self.command and found:
                            status, answer = handler(found, query, body)
                            break
                text = isinstance(answer, str)
                data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type", "text/plain; charset=UTF-8" if text else "application/json; charset=UTF-8"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _answer  # noqa: N815 - http.server's naming
            do_POST = _answer  # noqa: N815 - http.server dispatches on these exact method names
            do_PATCH = _answer  # noqa: N815 - http.server dispatches on these exact method names
            do_DELETE = _answer  # noqa: N815 - http.server dispatches on these exact method names

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._running.enter_context(serving_in_thread(self._server))
        return self

    def __exit__(self, *_exc: object) -> None:
        self._running.close()


def _not_found(path: str) -> Body:
    return {"error": {"code": 404, "message": f"Resource '{path}' was not found", "status": "NOT_FOUND"}}


def tokens() -> tuple[str, str | None]:
    return TOKEN, None
