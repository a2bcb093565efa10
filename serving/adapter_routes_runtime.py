"""In the serving container: which adapter version a public adapter name means now, read from the route table.

Why this runs in front of vLLM: vLLM keeps a loaded adapter by name, so an adapter rewritten in place under
its public name answers with the old weights on replicas that loaded it and with the new on the others, and
nothing drains the old. Here vLLM only ever sees immutable versioned names (`support-bot@v4`, the folder
`adapters/support-bot@v4/`, written once by the import job): this ASGI middleware rewrites a request's
`"model": "support-bot"` to the version the route table names, before vLLM resolves it. A request is
admitted as one version and answered by it (the answer's `model` says which); a swap is a new version
beside the old one and one write of the table (`gemma-verify adapters promote`, after its gate); each
replica re-reads the table every `ROUTES_REFRESH_S` and keeps the last good table when a read fails.

Names answered: the served model, each routed public name (rewritten), and `NAME@VERSION` directly (a
version being checked before promotion, or one draining after it); vLLM's filesystem resolver loads such a
folder only once its `adapter_config.json` exists, which the import job writes after every weight. Any
other name is refused here with 404, before vLLM's resolver could join it to a path.

The same middleware names public adapters in the LoRA gauge a GKE fleet's endpoint picker scores by: vLLM's
`vllm:lora_requests_info` lists the versions it runs (`running_lora_adapters="support-bot@v3"`), while the
picker sees a request's public `model` before any replica rewrites it, so llm-d's `lora-affinity-scorer` (which
looks the request's model up in that list) would never find `support-bot` running anywhere. On `GET /metrics`
each routed version is reported under its public name (`support-bot@v3` -> `support-bot` while the table
routes it; a version not routed, draining or being checked, keeps its versioned name), one entry per adapter
vLLM holds, so the scorer's count of used slots stays right. The answer is asked uncompressed and rewritten
whole (a few kB).

Standard library only: the launcher (serving/lora.py) embeds this file's text and registers it as a module
in the API-server process of the pinned upstream image. Environment: ROUTES_ENV (`gs://bucket/object`, or
`file:///path` for a local server), SERVED_NAMES_ENV (JSON list), REFRESH_ENV (seconds). On Google Cloud
the table is read with the instance's service-account token from the metadata server (Cloud Run, GKE
Workload Identity and TPU VMs alike); `STORAGE_EMULATOR_HOST` and `GCE_METADATA_HOST` point both elsewhere,
as Google's own clients let them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

ROUTES_ENV = "GEMMA_ADAPTER_ROUTES"
SERVED_NAMES_ENV = "GEMMA_SERVED_NAMES"
REFRESH_ENV = "GEMMA_ADAPTER_ROUTES_REFRESH_S"
ROUTES_REFRESH_S = 10.0
READ_TIMEOUT_S = 5.0
# A request body larger than this is refused (413) rather than held in memory to find its `model`.
MAX_BODY_BYTES = 32 * 1024 * 1024
# The route table's own bound: far above a stack's adapter bound (stacks/adapters.py), below a memory risk.
MAX_TABLE_BYTES = 1024 * 1024
SCHEMA = 1
# The gauge the endpoint picker reads (llm-d-router pkg/epp/framework/plugins/datalayer/extractor/metrics,
# labels running_lora_adapters and waiting_lora_adapters: comma-separated names).
METRICS_PATH = "/metrics"
LORA_INFO_SAMPLE = "vllm:lora_requests_info{"
_ADAPTER_LIST_LABEL = re.compile(r'\b(running_lora_adapters|waiting_lora_adapters)="([^"\\]*)"')
# A /metrics answer larger than this passes unchanged rather than being held in memory.
MAX_METRICS_BYTES = 8 * 1024 * 1024

ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,20}[a-z0-9]$")
VERSION_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,18}[a-z0-9])?$")
SEPARATOR = "@"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_version_label(label: str) -> bool:
    return bool(VERSION_LABEL.match(label)) and ".." not in label


def split_versioned(model: str) -> tuple[str, str] | None:
    """(name, version) of `NAME@VERSION`, or None when `model` is not one (never a path: no '/', no '..')."""
    name, separator, version = model.partition(SEPARATOR)
    if separator and ADAPTER_NAME.match(name) and is_version_label(version):
        return name, version
    return None


def parse_table(text: str) -> dict[str, str]:
    """Public name -> serving version, from the table's JSON; ValueError names what is wrong (a table
    written by hand is refused whole rather than half-applied)."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("adapters"), dict):
        raise ValueError(f"not a route table of schema {SCHEMA}: {{schema, adapters: {{NAME: {{version}}}}}}")
    routes: dict[str, str] = {}
    for name, entry in data["adapters"].items():
        version = entry.get("version") if isinstance(entry, dict) else None
        if not (isinstance(name, str) and ADAPTER_NAME.match(name)):
            raise ValueError(f"{name!r} is not an adapter name")
        if not (isinstance(version, str) and is_version_label(version)):
            raise ValueError(f"adapters.{name}.version {version!r} is not a version label")
        routes[name] = version
    return routes


def decide(model: object, served: frozenset[str], routes: Mapping[str, str] | None) -> tuple[int, str]:  # noqa: PLR0911 - one return per rule, in order
    """What one request's `model` becomes: (0, the model vLLM sees) or (HTTP status, why it is refused).

    `routes` None: no table was read yet (public adapter names wait: 503, the served model still answers).
    """
    if not isinstance(model, str):
        return 0, ""  # no model named: vLLM's own validation answers
    if model in served:
        return 0, model
    if split_versioned(model) is not None:
        return 0, model
    if routes is not None and model in routes:
        return 0, f"{model}{SEPARATOR}{routes[model]}"
    if ADAPTER_NAME.match(model):
        if routes is None:
            return 503, f"adapter {model!r}: this replica has not read its adapter routes yet; retry shortly"
        return 404, (
            f"model {model!r} is not served here: no version of it is promoted (gemma-verify adapters promote "
            f"NAME), or it is not an adapter of this stack; a version answers as NAME{SEPARATOR}VERSION"
        )
    return 404, f"model {model[:80]!r} is not served here"


def public_names_in_metrics(text: str, routes: Mapping[str, str]) -> str:
    """The exposition with each routed version in `vllm:lora_requests_info`'s adapter lists named by its public
    name (`support-bot@v3` -> `support-bot` while the table routes support-bot to v3); every other line as is."""
    public = {f"{name}{SEPARATOR}{version}": name for name, version in routes.items()}

    def renamed(match: re.Match[str]) -> str:
        names = [public.get(part.strip(), part.strip()) for part in match.group(2).split(",") if part.strip()]
        return f'{match.group(1)}="{",".join(dict.fromkeys(names))}"'

    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith(LORA_INFO_SAMPLE):
            lines[index] = _ADAPTER_LIST_LABEL.sub(renamed, line)
    return "\n".join(lines)


def _log(message: str) -> None:
    print(f"gemma-serving adapter routes: {message}", file=sys.stderr, flush=True)


def _metadata_token(timeout_s: float) -> str | None:
    """The instance's service-account access token (Cloud Run, GKE Workload Identity, TPU VMs)."""
    host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
    request = urllib.request.Request(
        f"http://{host}/computeMetadata/v1/instance/service-accounts/default/token",
        headers={"Metadata-Flavor": "Google"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - the metadata server
        return str(json.loads(answer.read())["access_token"])


def read_table_text(location: str, timeout_s: float = READ_TIMEOUT_S) -> str | None:
    """The table's text at `location`, or None when it does not exist yet (nothing promoted)."""
    if location.startswith("file://"):
        path = Path(urllib.parse.urlparse(location).path)
        try:
            with path.open("rb") as file:
                return file.read(MAX_TABLE_BYTES + 1).decode()
        except FileNotFoundError:
            return None
    if not location.startswith("gs://"):
        raise ValueError(f"{ROUTES_ENV} {location!r}: gs://BUCKET/OBJECT or file:///PATH")
    bucket, _, name = location.removeprefix("gs://").partition("/")
    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    base = emulator.rstrip("/") if emulator else "https://storage.googleapis.com"
    url = f"{base}/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    headers = {} if emulator else {"Authorization": f"Bearer {_metadata_token(timeout_s)}"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - Google's API or its emulator
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - Google's API or its emulator
            return bytes(answer.read(MAX_TABLE_BYTES + 1)).decode()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


class RouteTable:
    """The last good table, re-read in a background thread; `routes` is None until a first read answered."""

    def __init__(self, location: str, refresh_s: float, read: Callable[[str], str | None] = read_table_text) -> None:
        self.location = location
        self.refresh_s = refresh_s
        self._read = read
        self.routes: dict[str, str] | None = None
        self._started = False
        self._lock = threading.Lock()

    def refresh(self) -> None:
        try:
            text = self._read(self.location)
            routes = {} if text is None else parse_table(text)
        except Exception as error:  # noqa: BLE001 - any failure keeps the last good table; said, never raised
            _log(f"could not read {self.location} ({type(error).__name__}: {error}); keeping the last table")
            return
        if routes != self.routes:
            _log(f"{len(routes)} adapter(s) routed: " + ", ".join(f"{n}->{v}" for n, v in sorted(routes.items())))
        self.routes = routes

    def start(self) -> None:
        """Read once now (a replica starts with the table), then every `refresh_s` in a daemon thread."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self.refresh()
        threading.Thread(target=self._loop, name="gemma-adapter-routes", daemon=True).start()

    def _loop(self) -> None:
        while True:
            time.sleep(self.refresh_s)
            self.refresh()


_TABLE: RouteTable | None = None


def table_from_env() -> RouteTable:
    """The process's one table (every middleware instance shares it), started on first use."""
    global _TABLE  # noqa: PLW0603 - one table per serving process
    if _TABLE is None:
        location = os.environ.get(ROUTES_ENV, "")
        if not location:
            raise RuntimeError(f"{ROUTES_ENV} is not set: the launcher serves adapters only with a route table")
        _TABLE = RouteTable(location, float(os.environ.get(REFRESH_ENV) or ROUTES_REFRESH_S))
    _TABLE.start()
    return _TABLE


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "NotFoundError", "code": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 503:
        headers.append((b"retry-after", b"5"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class AdapterRoutes:
    """ASGI middleware: a POST whose JSON body names a `model` gets that model as `decide` says, or a refusal."""

    def __init__(self, app: App, table: RouteTable | None = None, served: frozenset[str] | None = None) -> None:
        self.app = app
        self.table = table or table_from_env()
        self.served = served if served is not None else frozenset(json.loads(os.environ.get(SERVED_NAMES_ENV, "[]")))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        routes = self.table.routes
        if (
            scope.get("type") == "http"
            and scope.get("method") == "GET"
            and scope.get("path") == METRICS_PATH
            and routes
        ):
            # Asked uncompressed (a gzip answer could not be rewritten), then held and renamed.
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"]
            await self.app({**scope, "headers": headers}, receive, _renaming_metrics(send, routes))
            return
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message.get("type") != "http.request":
                await self.app(scope, _replay([], receive, first=message), send)
                return
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                await _refuse(send, 413, f"request body above {MAX_BODY_BYTES} bytes")
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        try:
            document = json.loads(body) if body else None
        except ValueError:
            document = None
        if isinstance(document, dict) and "model" in document:
            status, value = decide(document["model"], self.served, self.table.routes)
            if status:
                await _refuse(send, status, value)
                return
            if value != document["model"]:
                body = json.dumps({**document, "model": value}).encode()
                headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
                scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        await self.app(scope, _replay([body], receive), send)


def _renaming_metrics(send: Send, routes: Mapping[str, str]) -> Send:
    """A send() that holds vLLM's /metrics answer and sends it with public adapter names; an answer that is
    encoded, not a 200 or above the bound passes as it came."""
    held: list[Message] = []
    size = 0

    async def renaming(message: Message) -> None:
        nonlocal size
        if message.get("type") == "http.response.start":
            names = {bytes(k).lower() for k, _ in message.get("headers", [])}
            if message.get("status") == 200 and b"content-encoding" not in names:
                held.append(message)
                return
        elif message.get("type") == "http.response.body" and held:
            held.append(message)
            size += len(message.get("body", b""))
            if size > MAX_METRICS_BYTES:
                for early in held:
                    await send(early)
                held.clear()
                return
            if message.get("more_body", False):
                return
            start, bodies = held[0], held[1:]
            held.clear()
            text = b"".join(bytes(m.get("body", b"")) for m in bodies).decode("utf-8", "replace")
            body = public_names_in_metrics(text, routes).encode()
            kept = [(k, v) for k, v in start.get("headers", []) if bytes(k).lower() != b"content-length"]
            await send({**start, "headers": [*kept, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        await send(message)

    return renaming


def _replay(bodies: list[bytes], receive: Receive, *, first: Message | None = None) -> Receive:
    """A receive() that yields the (rewritten) body once, then the client's own messages (a streaming answer
    listens there for the client going away)."""
    pending: list[Message] = [first] if first is not None else []
    pending += [{"type": "http.request", "body": body, "more_body": False} for body in bodies]

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
