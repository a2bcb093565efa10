"""A fake Cloud TPU v2alpha1 API on 127.0.0.1 that plays the queued-resource lifecycle.

Why a real HTTP server rather than a mock transport: the provider's retries, query parameters, auth
header and JSON handling are exercised exactly as against Google, and the fake keeps the states a
request moves through (WAITING_FOR_RESOURCES -> PROVISIONING -> ACTIVE, or FAILED with a reason), the
409 Google answers for an existing id, and transient 429/503 answers.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

FAKE_TOKEN = "fake-token-for-tests"
_PREFIX = "/v2alpha1/"


@dataclass
class Scenario:
    """How the fake treats one queued-resource id."""

    # States reported by successive GETs after the POST; the last one repeats.
    states: list[str] = field(default_factory=lambda: ["WAITING_FOR_RESOURCES", "PROVISIONING", "ACTIVE"])
    failed_reason: str = "There is no more capacity in the zone"
    failed_code: int = 8
    # Statuses answered to the first POSTs (then the POST succeeds), e.g. [503, 429].
    create_failures: list[int] = field(default_factory=list)
    # Statuses answered to the first GETs of the queued resource.
    get_failures: list[int] = field(default_factory=list)
    # Statuses answered to POSTs that Google nevertheless carried out (the request exists): a lost answer.
    lost_create_answers: list[int] = field(default_factory=list)
    # A 4xx answered to every POST (never retried by a correct client).
    create_rejection: tuple[int, str] | None = None
    # The create operation ends with this error and the request never appears.
    operation_error: str | None = None
    # GETs that still show DELETING after a DELETE, before the request is gone.
    deleting_polls: int = 2
    # The node's state once the request is ACTIVE (PREEMPTED: a spot node Google took back).
    node_state: str = "READY"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    authorization: str | None


@dataclass
class _Queued:
    body: dict[str, Any]
    scenario: Scenario
    reads: int = 0
    deleting_left: int | None = None
    fixed_state: str | None = None


class FakeTpuApi:
    """Start with `with FakeTpuApi() as api:`; `api.base_url` is what the client should use."""

    def __init__(self) -> None:
        self.scenarios: dict[str, Scenario] = {}
        # Per zone, for requests that try several placements with one id; wins over `scenarios`.
        self.zone_scenarios: dict[str, Scenario] = {}
        # A node's internal address per zone, so a test can tell which placement the endpoint follows.
        self.addresses: dict[str, str] = {}
        self.queued: dict[str, _Queued] = {}
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # shutdown() waits for the serving loop's next poll: the default 0.5 s would add that to every test.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v2alpha1"

    def __enter__(self) -> FakeTpuApi:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_existing(self, name: str, body: dict[str, Any], state: str, scenario: Scenario | None = None) -> None:
        """A queued resource that exists before the test's first request (for the 409 paths)."""
        self.queued[name] = _Queued(body=body, scenario=scenario or Scenario(), fixed_state=state)

    def calls(self, method: str, contains: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and contains in r.path]

    # -- request handling ------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
                return

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_POST(self) -> None:
                self._dispatch("POST")

            def do_DELETE(self) -> None:
                self._dispatch("DELETE")

            def _dispatch(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                record = Recorded(method, parts.path, parse_qs(parts.query), body, self.headers.get("authorization"))
                with api._lock:
                    api.requests.append(record)
                    status, payload, headers = api._answer(record)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _answer(self, request: Recorded) -> tuple[int, Any, dict[str, str]]:  # noqa: PLR0911 - one route each
        if request.authorization != f"Bearer {FAKE_TOKEN}":
            return _error(401, "UNAUTHENTICATED", "missing or wrong bearer token")
        if not request.path.startswith(_PREFIX):
            return _error(404, "NOT_FOUND", "unknown API version")
        path = request.path[len(_PREFIX) :]
        if request.method == "POST" and path.endswith("/queuedResources"):
            return self._create(path, request)
        if "/operations/" in path:
            return self._operation(path)
        if "/nodes/" in path:
            return self._node(path)
        if "/queuedResources/" in path and request.method == "GET":
            return self._get(path)
        if "/queuedResources/" in path and request.method == "DELETE":
            return self._delete(path, request)
        return _error(404, "NOT_FOUND", f"no route for {request.method} {path}")

    def _create(self, parent_path: str, request: Recorded) -> tuple[int, Any, dict[str, str]]:
        queued_id = request.query.get("queuedResourceId", [""])[0]
        zone = parent_path.split("/locations/", 1)[-1].split("/", 1)[0]
        scenario = self.zone_scenarios.get(zone) or self.scenarios.setdefault(queued_id, Scenario())
        if scenario.create_failures:
            status = scenario.create_failures.pop(0)
            return _error(status, "UNAVAILABLE" if status >= 500 else "RESOURCE_EXHAUSTED", "try again", retry=True)
        if scenario.lost_create_answers:
            status = scenario.lost_create_answers.pop(0)
            self.queued.setdefault(f"{parent_path}/{queued_id}", _Queued(body=request.body or {}, scenario=scenario))
            return _error(status, "RESOURCE_EXHAUSTED", "try again", retry=True)
        if scenario.create_rejection is not None:
            return _error(scenario.create_rejection[0], "INVALID_ARGUMENT", scenario.create_rejection[1])
        name = f"{parent_path}/{queued_id}"
        if name in self.queued:
            return _error(409, "ALREADY_EXISTS", f"Resource '{name}' already exists")
        if scenario.operation_error is None:
            self.queued[name] = _Queued(body=request.body or {}, scenario=scenario)
        location = parent_path.rsplit("/queuedResources", 1)[0]
        return 200, {"name": f"{location}/operations/create-{queued_id}", "done": False}, {}

    def _operation(self, path: str) -> tuple[int, Any, dict[str, str]]:
        queued_id = path.rsplit("/create-", 1)[-1]
        zone = path.split("/locations/", 1)[-1].split("/", 1)[0]
        scenario = self.zone_scenarios.get(zone) or self.scenarios.get(queued_id)
        if scenario is not None and scenario.operation_error is not None:
            return 200, {"name": path, "done": True, "error": {"code": 3, "message": scenario.operation_error}}, {}
        return 200, {"name": path, "done": True}, {}

    def _get(self, name: str) -> tuple[int, Any, dict[str, str]]:
        queued = self.queued.get(name)
        if queued is None:
            return _error(404, "NOT_FOUND", f"Resource '{name}' was not found")
        if queued.scenario.get_failures:
            status = queued.scenario.get_failures.pop(0)
            return _error(status, "UNAVAILABLE", "try again", retry=True)
        if queued.deleting_left is not None:
            if queued.deleting_left <= 0:
                del self.queued[name]
                return _error(404, "NOT_FOUND", f"Resource '{name}' was not found")
            queued.deleting_left -= 1
            return 200, self._resource(name, queued, "DELETING"), {}
        if queued.fixed_state is not None:
            state = queued.fixed_state
        else:
            states = queued.scenario.states
            state = states[min(queued.reads, len(states) - 1)]
            queued.reads += 1
        return 200, self._resource(name, queued, state), {}

    def _resource(self, name: str, queued: _Queued, state: str) -> dict[str, Any]:
        resource = {**queued.body, "name": name, "state": {"state": state}}
        if state == "FAILED":
            resource["state"]["failedData"] = {
                "error": {"code": queued.scenario.failed_code, "message": queued.scenario.failed_reason}
            }
        return resource

    def _delete(self, name: str, request: Recorded) -> tuple[int, Any, dict[str, str]]:
        queued = self.queued.get(name)
        if queued is None:
            return _error(404, "NOT_FOUND", f"Resource '{name}' was not found")
        if request.query.get("force") != ["true"] and queued.fixed_state not in (None, "FAILED", "SUSPENDED"):
            return _error(400, "FAILED_PRECONDITION", "the queued resource has nodes; use force")
        queued.deleting_left = queued.scenario.deleting_polls
        location = name.rsplit("/queuedResources", 1)[0]
        return 200, {"name": f"{location}/operations/delete", "done": False}, {}

    def _node(self, name: str) -> tuple[int, Any, dict[str, str]]:
        location, node_id = name.rsplit("/nodes/", 1)
        for queued_name, queued in self.queued.items():
            spec = (queued.body.get("tpu") or {}).get("nodeSpec") or [{}]
            if spec[0].get("nodeId") == node_id and queued_name.startswith(f"{location}/"):
                external = spec[0]["node"]["networkConfig"].get("enableExternalIps")
                zone = location.split("/locations/", 1)[-1]
                endpoint: dict[str, Any] = {"ipAddress": self.addresses.get(zone, "10.128.0.7"), "port": 8470}
                if external:
                    endpoint["accessConfig"] = {"externalIp": "34.1.2.3"}
                state = queued.scenario.node_state
                return 200, {"name": name, "state": state, "networkEndpoints": [endpoint]}, {}
        return _error(404, "NOT_FOUND", f"Resource '{name}' was not found")


def _error(status: int, code: str, message: str, *, retry: bool = False) -> tuple[int, Any, dict[str, str]]:
    headers = {"retry-after": "0"} if retry and status == 429 else {}
    return status, {"error": {"code": status, "status": code, "message": message}}, headers


class FakeClock:
    """Injectable time: `sleep` advances `now` instantly, and every sleep is remembered."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
