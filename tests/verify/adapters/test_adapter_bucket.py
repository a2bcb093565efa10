"""The route table and a version's files in the model bucket, through the project's Google client, against a
local stand-in for Cloud Storage's JSON API (storage.v1.json: objects.get with `alt=media` and a Range,
objects.list by prefix, objects.insert's media upload with `ifGenerationMatch`, answering 412 when the
object's generation moved, as Google does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from remote.google_client import GoogleApis
from serving.adapter_versions import Route, RouteTable
from tests.components.safetensors_files import lora_tensors, safetensors_bytes
from tests.components.test_adapter_import import SHAPES
from tests.verify.threaded_server import serving_in_thread
from verify.adapters.routes import GcsRouteStore, RouteConflictError
from verify.adapters.tensors import BucketFiles, check_tensors

BUCKET = "gemma-l4-models-bucket-1a2b3c"
TOKEN = "fake-token"


@dataclass
class Bucket:
    objects: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    ranges: list[str] = field(default_factory=list)

    def put(self, name: str, data: bytes) -> None:
        generation = self.objects.get(name, (b"", 0))[1] + 1
        self.objects[name] = (data, generation)


@pytest.fixture
def bucket() -> Iterator[tuple[Bucket, str]]:
    state = Bucket()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            return

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._send(status, json.dumps({"error": {"code": status, "message": message}}).encode())

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            prefix = f"/storage/storage/v1/b/{BUCKET}/o"
            if parts.path == prefix:
                wanted = query.get("prefix", [""])[0]
                items = [
                    {"name": n, "size": str(len(d))} for n, (d, _g) in state.objects.items() if n.startswith(wanted)
                ]
                self._send(200, json.dumps({"items": items}).encode())
                return
            name = unquote(parts.path.removeprefix(prefix + "/"))
            if name not in state.objects:
                self._error(404, f"No such object: {BUCKET}/{name}")
                return
            data, generation = state.objects[name]
            if query.get("alt") != ["media"]:
                self._send(200, json.dumps({"generation": str(generation), "size": str(len(data))}).encode())
                return
            if "generation" in query and int(query["generation"][0]) != generation:
                self._error(404, "No such object generation")
                return
            wanted_range = self.headers.get("Range")
            if wanted_range:
                state.ranges.append(wanted_range)
                start, end = (int(x) for x in wanted_range.removeprefix("bytes=").split("-"))
                self._send(206, data[start : end + 1], "application/octet-stream")
                return
            self._send(200, data, "application/octet-stream")

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            assert self.headers.get("Authorization") == f"Bearer {TOKEN}"
            assert parts.path == f"/storage/upload/storage/v1/b/{BUCKET}/o"
            assert query["uploadType"] == ["media"]
            name = query["name"][0]
            body = self.rfile.read(int(self.headers["Content-Length"]))
            current = state.objects.get(name, (b"", 0))[1]
            if int(query["ifGenerationMatch"][0]) != current:
                self._error(412, "At least one of the pre-conditions you specified did not hold.")
                return
            state.put(name, body)
            self._send(200, json.dumps({"name": name, "generation": str(current + 1)}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with serving_in_thread(server):
        yield state, f"http://127.0.0.1:{server.server_address[1]}"


def _apis(url: str) -> GoogleApis:
    return GoogleApis(lambda: (TOKEN, None), api_root=url)


def test_the_table_is_read_at_its_generation_and_written_over_it_only(bucket: tuple[Bucket, str]) -> None:
    """First promotion: no table (generation 0, 'must not exist'); a second writer that read an older
    generation gets Google's 412 as a conflict, and the first writer's route stays."""
    _state, url = bucket
    with _apis(url) as apis:
        store = GcsRouteStore(apis, BUCKET, "adapter-routes.json")
        empty = store.read()
        assert (empty.routes, empty.generation) == ({}, 0)
        store.write(empty.with_route("support-bot", Route("v1")))
        first = store.read()
        assert first.routes["support-bot"].version == "v1"
        assert first.generation == 1
        store.write(first.with_route("sql-writer", Route("v1")))
        with pytest.raises(RouteConflictError):
            store.write(first.with_route("support-bot", Route("v2", "v1")))
        assert set(store.read().routes) == {"support-bot", "sql-writer"}
        assert store.read().routes["support-bot"].version == "v1"


def test_a_versions_tensors_are_read_from_the_bucket_by_range(bucket: tuple[Bucket, str]) -> None:
    """The check reads the header, never the weights: a wrong shape in the bucket is named."""
    state, url = bucket
    tensors = lora_tensors(SHAPES, 8, ("q_proj",))
    tensors["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"] = (96, 8)
    weights = safetensors_bytes(tensors) + b"\x00" * 4096  # weights far larger than the header
    state.put("adapters/support-bot@v2/adapter_model.safetensors", weights)
    config = {"peft_type": "LORA", "r": 8, "target_modules": ["q_proj"], "base_model_name_or_path": "/m"}
    state.put("adapters/support-bot@v2/adapter_config.json", json.dumps(config).encode())
    state.put("adapters/support-bot@v1/adapter_config.json", b"{}")
    with _apis(url) as apis:
        files = BucketFiles(apis, BUCKET, "adapters/support-bot@v2")
        checked = check_tensors(files, name="support-bot@v2", rank=8, shapes=SHAPES, shapes_from="the tiny model")
    assert checked.files == ["adapter_model.safetensors"]
    assert checked.tensors == 4
    assert any("96x8, expected 128x8" in problem for problem in checked.problems)
    assert all(int(r.split("-")[1]) < len(weights) - 1 for r in state.ranges)  # ranges, not the whole file


def test_an_unreadable_version_says_so_instead_of_passing(bucket: tuple[Bucket, str]) -> None:
    _state, url = bucket
    with _apis(url) as apis:
        checked = check_tensors(
            BucketFiles(apis, BUCKET, "adapters/absent@v1"), name="absent@v1", rank=8, shapes=SHAPES, shapes_from="x"
        )
    assert checked.problems
    assert any("no adapter_config.json" in problem for problem in checked.problems)


def test_the_route_table_the_store_writes_is_one_the_replicas_read() -> None:
    text = RouteTable({"support-bot": Route("v2", "v1", "2026-12-02T00:00:00Z")}).to_text()
    assert json.loads(text) == {
        "schema": 1,
        "adapters": {"support-bot": {"version": "v2", "previous": "v1", "promotedAt": "2026-12-02T00:00:00Z"}},
    }
