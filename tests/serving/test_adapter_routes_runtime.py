"""The route middleware in the serving container: what each request's `model` becomes before vLLM sees it.

Driven as ASGI (an app that records what it was handed) and through its table reader against a file and a
local stand-in for Cloud Storage's `objects.get?alt=media` (storage.v1.json), which the reader reaches as
Google's clients reach an emulator (`STORAGE_EMULATOR_HOST`).
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Iterator, MutableMapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from serving import adapter_routes_runtime as runtime
from serving.adapter_routes_runtime import AdapterRoutes, RouteTable, decide, parse_table, read_table_text
from serving.adapter_versions import Route
from serving.adapter_versions import RouteTable as Table
from serving.lora import ROUTES_MODULE, ROUTES_SOURCE
from serving.route_guard import launcher_source
from tests.verify.threaded_server import serving_in_thread

SERVED = frozenset({"tiny-gemma"})
ROUTES = {"support-bot": "v2"}


@pytest.mark.parametrize(
    ("model", "becomes"),
    [
        ("tiny-gemma", (0, "tiny-gemma")),
        ("support-bot", (0, "support-bot@v2")),
        ("support-bot@v1", (0, "support-bot@v1")),  # a version draining, or being checked before promotion
        (None, (0, "")),
    ],
)
def test_names_the_server_answers(model: object, becomes: tuple[int, str]) -> None:
    """The served model passes, a routed public name becomes its version, a version answers as itself."""
    assert decide(model, SERVED, ROUTES) == becomes


@pytest.mark.parametrize("model", ["sql-writer", "../weights", "/etc", "support-bot@../x", "support-bot@V2", "a" * 300])
def test_names_it_refuses_before_vllm_joins_them_to_a_path(model: str) -> None:
    """An adapter never promoted, a path, or a version that is no label: 404 here, never the resolver's join."""
    status, why = decide(model, SERVED, ROUTES)
    assert status == 404
    assert "not served here" in why


def test_public_names_wait_until_the_first_table_is_read() -> None:
    """A replica that has not read its table yet must not guess a version: 503 (retry), the base still serves."""
    assert decide("support-bot", SERVED, None)[0] == 503
    assert decide("tiny-gemma", SERVED, None) == (0, "tiny-gemma")


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        json.dumps({"schema": 2, "adapters": {}}),
        json.dumps({"schema": 1, "adapters": {"Support": {"version": "v1"}}}),
        json.dumps({"schema": 1, "adapters": {"support-bot": {"version": "../v1"}}}),
        json.dumps({"schema": 1, "adapters": {"support-bot": "v1"}}),
    ],
)
def test_a_malformed_table_is_refused_whole(text: str) -> None:
    """A table edited by hand is not half-applied: refused, and the replica keeps its last good one."""
    with pytest.raises(ValueError, match=r"schema|adapter name|version label|Expecting"):
        parse_table(text)


def test_the_writer_and_the_reader_agree_on_the_table() -> None:
    """promote writes with serving/adapter_versions.py; replicas read with this module: one format."""
    text = Table({"support-bot": Route("v2", "v1", "2026-12-01T00:00:00Z")}).to_text()
    assert parse_table(text) == {"support-bot": "v2"}
    assert Table.parse(text).routes["support-bot"].previous == "v1"


class Recorder:
    """The app behind the middleware: what it was handed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[dict[bytes, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        self.bodies.append(message.get("body", b""))
        self.headers.append(dict(scope.get("headers", [])))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _call(app: AdapterRoutes, body: bytes, *, method: str = "POST", chunks: int = 1) -> tuple[int, bytes]:
    step = max(1, len(body) // chunks)
    parts = [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    messages = [{"type": "http.request", "body": part, "more_body": i < len(parts) - 1} for i, part in enumerate(parts)]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": method, "path": "/v1/completions", "headers": [(b"content-length", b"1")]}
    asyncio.run(app(scope, receive, send))
    return int(sent[0]["status"]), b"".join(m.get("body", b"") for m in sent[1:])


def _middleware(routes: dict[str, str] | None = ROUTES) -> tuple[AdapterRoutes, Recorder]:
    table = RouteTable("file:///unused", 10.0, read=lambda _l: None)
    table.routes = routes
    recorder = Recorder()
    return AdapterRoutes(recorder, table=table, served=SERVED), recorder


def test_the_request_reaches_vllm_with_the_version_and_a_length_that_fits() -> None:
    """vLLM must see `support-bot@v2` (one version per request), in a body whose length header is right."""
    app, recorder = _middleware()
    body = json.dumps({"model": "support-bot", "prompt": "hi", "max_tokens": 4}).encode()
    assert _call(app, body, chunks=3)[0] == 200
    forwarded = json.loads(recorder.bodies[0])
    assert forwarded == {"model": "support-bot@v2", "prompt": "hi", "max_tokens": 4}
    assert recorder.headers[0][b"content-length"] == str(len(recorder.bodies[0])).encode()


def test_a_refused_name_never_reaches_vllm() -> None:
    app, recorder = _middleware()
    status, body = _call(app, json.dumps({"model": "../etc", "prompt": "hi"}).encode())
    assert status == 404
    assert json.loads(body)["error"]["code"] == 404
    assert recorder.bodies == []


def test_other_requests_pass_untouched() -> None:
    """GETs, and bodies without a model (vLLM's own validation answers them), are not the middleware's."""
    app, recorder = _middleware()
    assert _call(app, b"", method="GET")[0] == 200
    assert _call(app, b"not json")[0] == 200
    assert recorder.bodies[-1] == b"not json"


def test_a_body_above_the_bound_is_refused_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "MAX_BODY_BYTES", 16)
    app, recorder = _middleware()
    assert _call(app, b"x" * 64, chunks=4)[0] == 413
    assert recorder.bodies == []


def test_a_failed_read_keeps_the_last_good_table(capsys: pytest.CaptureFixture[str]) -> None:
    """A replica whose read fails (the network, a table edited badly) keeps serving what it knew, and says so."""
    answers: list[str | None] = [json.dumps({"schema": 1, "adapters": {"support-bot": {"version": "v1"}}}), "{bad"]
    table = RouteTable("file:///t", 10.0, read=lambda _l: answers.pop(0))
    table.refresh()
    table.refresh()
    assert table.routes == {"support-bot": "v1"}
    assert "keeping the last table" in capsys.readouterr().err


def test_a_missing_table_routes_nothing_yet(tmp_path: Path) -> None:
    """Before the first promotion there is no table: public names are refused (404), nothing guessed."""
    assert read_table_text((tmp_path / "absent.json").as_uri()) is None
    table = RouteTable((tmp_path / "absent.json").as_uri(), 10.0)
    table.refresh()
    assert table.routes == {}


@pytest.fixture
def fake_storage(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, bytes]]:
    objects: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            return

        def do_GET(self) -> None:
            data = objects.get(self.path)
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{server.server_address[1]}")
    with serving_in_thread(server):
        yield objects


def test_the_table_is_read_through_cloud_storages_api(fake_storage: dict[str, bytes]) -> None:
    """objects.get with alt=media on the bucket and the object's escaped name; a 404 is 'no table yet'."""
    fake_storage["/storage/v1/b/models/o/adapter-routes.json?alt=media"] = b'{"schema": 1, "adapters": {}}'
    assert read_table_text("gs://models/adapter-routes.json") == '{"schema": 1, "adapters": {}}'
    assert read_table_text("gs://models/other.json") is None


def test_the_launcher_registers_the_module_from_its_own_source() -> None:
    """The container runs the pinned upstream image: the module travels in the launcher, standard library only."""
    source = launcher_source(((ROUTES_MODULE, ROUTES_SOURCE),))
    assert repr(ROUTES_SOURCE) in source
    assert ROUTES_MODULE in source
    tree = ast.parse(ROUTES_SOURCE)
    imported = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported <= {
        "__future__",
        "json",
        "os",
        "re",
        "sys",
        "threading",
        "time",
        "urllib",
        "collections",
        "pathlib",
        "typing",
    }


# What vLLM 0.32 exports (the gauge's shape, seen on the live server: tests/live/test_gke_adapter_pod_live.py).
LORA_METRICS = (
    "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
    "# TYPE vllm:lora_requests_info gauge\n"
    'vllm:lora_requests_info{max_lora="4",running_lora_adapters="support-bot@v2,support-bot@v1",'
    'waiting_lora_adapters="sql-writer@v1,support-bot@v2"} 1.7e+09\n'
    'vllm:num_requests_running{model_name="support-bot@v2"} 2.0\n'
)


def test_the_picker_sees_routed_versions_under_their_public_names() -> None:
    """llm-d's lora-affinity-scorer looks the request's `model` (the public name: the picker routes before any
    replica rewrites it) up in running_lora_adapters; vLLM lists versions, so no replica ever had affinity for
    `support-bot`. The routed version is listed under its public name; a draining version keeps its own; every
    other line is untouched."""
    renamed = runtime.public_names_in_metrics(LORA_METRICS, ROUTES)
    assert 'running_lora_adapters="support-bot,support-bot@v1"' in renamed
    assert 'waiting_lora_adapters="sql-writer@v1,support-bot"' in renamed
    assert 'max_lora="4"' in renamed
    assert 'vllm:num_requests_running{model_name="support-bot@v2"} 2.0' in renamed
    assert runtime.public_names_in_metrics(LORA_METRICS, {}) == LORA_METRICS


class MetricsApp:
    """vLLM's /metrics behind the middleware: answers in two body messages, gzip when asked (as prometheus_client
    does), and records the headers it was asked with."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.asked: list[dict[bytes, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        self.asked.append(headers)
        encoded = b"gzip" in headers.get(b"accept-encoding", b"")
        body = LORA_METRICS.encode()
        start_headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"text/plain")]
        if encoded:
            start_headers.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": self.status, "headers": start_headers})
        await send({"type": "http.response.body", "body": body[:40], "more_body": True})
        await send({"type": "http.response.body", "body": body[40:], "more_body": False})


def _get_metrics(app: AdapterRoutes) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": "GET", "path": "/metrics", "headers": [(b"accept-encoding", b"gzip")]}
    asyncio.run(app(scope, receive, send))
    return int(sent[0]["status"]), dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_metrics_are_asked_plain_and_sent_renamed_with_their_length() -> None:
    """The Go picker asks gzip; a gzip answer could not be renamed, so the middleware asks vLLM uncompressed and
    sends one body whose content-length is its own."""
    metrics = MetricsApp()
    table = RouteTable("file:///unused", 10.0, read=lambda _l: None)
    table.routes = ROUTES
    status, headers, body = _get_metrics(AdapterRoutes(metrics, table=table, served=SERVED))
    assert status == 200
    assert b"accept-encoding" not in metrics.asked[0]
    assert b'running_lora_adapters="support-bot,support-bot@v1"' in body
    assert headers[b"content-length"] == str(len(body)).encode()


def test_metrics_pass_as_they_came_without_a_table_or_a_200() -> None:
    """Before the first table a replica renames nothing (it routes nothing); an error answer is not touched."""
    table = RouteTable("file:///unused", 10.0, read=lambda _l: None)
    status, _, body = _get_metrics(AdapterRoutes(MetricsApp(), table=table, served=SERVED))
    assert (status, body) == (200, LORA_METRICS.encode())
    table.routes = ROUTES
    status, _, body = _get_metrics(AdapterRoutes(MetricsApp(status=500), table=table, served=SERVED))
    assert (status, body) == (500, LORA_METRICS.encode())
