"""A local Cloud Run Admin API v2 (`services.get` only) on 127.0.0.1, and a traffic shifter that plays `pulumi up`.

Why: promotion reads the live service before and after every traffic change; the fake answers with
the body in data/service-gated.json (shaped by Google's discovery document, see data/README.md) and
lets the fake shifter rewrite `traffic`/`trafficStatuses` the way a finished `pulumi up` leaves them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.verify.threaded_server import serving_in_thread
from verify.traffic import ShiftFailedError, TrafficChange

DATA = Path(__file__).parent / "data"
ACCESS_TOKEN = "fake-access-token"
REVISION = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
SERVING = "gemma-l4-vllm-0a1b2c3d4e"
CANDIDATE = "gemma-l4-vllm-3f2a9c1b7e"
PREVIOUS = "gemma-l4-vllm-9e8d7c6b5a"
SERVICE = "projects/test-project/locations/us-east4/services/gemma-l4-vllm"


def gated_service() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((DATA / "service-gated.json").read_text())
    return body


@dataclass
class FakeCloudRun:
    """The service body the API answers with; ``status`` other than 200 answers a Google error instead."""

    service: dict[str, Any] = field(default_factory=gated_service)
    status: int = 200
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""

    def candidate_uri(self, uri: str) -> None:
        for status in self.service["trafficStatuses"]:
            if status.get("tag") == "candidate":
                status["uri"] = uri

    def route(self, split: dict[str, int], *, candidate: str, candidate_uri: str) -> None:
        """Traffic as a finished `pulumi up` leaves it: the split by revision, the candidate tagged."""
        targets: list[dict[str, Any]] = []
        for revision, percent in split.items():
            target: dict[str, Any] = {"type": REVISION, "revision": revision}
            if percent:
                target["percent"] = percent
            if revision == candidate:
                target["tag"] = "candidate"
            targets.append(target)
        if candidate not in split:
            targets.append({"type": REVISION, "revision": candidate, "tag": "candidate"})
        self.service["traffic"] = copy.deepcopy(targets)
        for target in targets:
            if target.get("tag") == "candidate":
                target["uri"] = candidate_uri
        self.service["trafficStatuses"] = targets

    def answer(self, path: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        self.requests.append((path, authorization))
        if authorization != f"Bearer {ACCESS_TOKEN}":
            return 401, _error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
        if self.status != 200:
            return self.status, _error(self.status, "The caller does not have permission", "PERMISSION_DENIED")
        if path != f"/v2/{self.service['name']}":
            return 404, _error(404, f"Resource '{path}' was not found", "NOT_FOUND")
        return 200, self.service


def _error(code: int, message: str, status: str) -> dict[str, Any]:
    """Google's JSON error body (google.rpc.Status inside "error")."""
    return {"error": {"code": code, "message": message, "status": status}}


@contextmanager
def running_api(fake: FakeCloudRun) -> Iterator[FakeCloudRun]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as Google's front ends: a command's calls share one connection (every answer has a length).
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart

        def do_GET(self) -> None:
            code, body = fake.answer(self.path, self.headers.get("Authorization"))
            payload = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield fake


@dataclass
class FakeShifter:
    """Records each change and applies it to the fake API like a successful `pulumi up`."""

    api: FakeCloudRun
    candidate: str
    candidate_uri: str
    fail: bool = False
    # Fails only the changes this says (a later step, the step back), after applying them when `partly`.
    fail_when: Callable[[TrafficChange], bool] | None = None
    after_apply: Callable[[TrafficChange], None] | None = None
    changes: list[TrafficChange] = field(default_factory=list)

    def apply(self, change: TrafficChange) -> None:
        self.changes.append(change)
        if self.fail or (self.fail_when is not None and self.fail_when(change)):
            raise ShiftFailedError("`pulumi up` failed: policy violation (fake)")
        split = {change.serving_revision: 100 - change.candidate_percent}
        if change.serving_revision != self.candidate:
            split[self.candidate] = change.candidate_percent
        self.api.route(split, candidate=self.candidate, candidate_uri=self.candidate_uri)
        if self.after_apply is not None:
            self.after_apply(change)
