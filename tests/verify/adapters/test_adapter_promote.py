"""`gemma-verify adapters promote`: a version takes its public name only after its gate passed on the service.

The service is a fake vLLM (httpx.MockTransport) whose requests go through the serving container's own route
rules (serving/adapter_routes_runtime.py `decide`), reading the same table file promote writes: what the
public name means is what the real middleware would make of that file. Each version answers differently, so
which version answered is in each answer's `model` and text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx
import pytest

from serving.adapter_routes_runtime import decide, parse_table
from serving.adapter_versions import Route, RouteTable
from verify.adapters.promote import PromoteRequest, PromoteSeams, PromotionReport, promote_adapter
from verify.adapters.routes import FileRouteStore, RouteConflictError
from verify.adapters.run import AdaptersOptions, LocalTensors, Probe, TensorPlace
from verify.adapters.tensors import LocalFiles
from verify.endpoint import AuthKind, Target
from verify.reach import Reach

BASE = "tiny-gemma"
TARGET = Target(base_url="http://vllm.test", model=BASE, auth_kind=AuthKind.NONE, source="test")
OPTIONS = AdaptersOptions(max_tokens=8)
PROBES = (Probe(prompt="Which plan?", expect="Enterprise"),)
# What each loaded version answers (None: the resolver refuses the folder, as vLLM answers a missing one).
VERSIONS: dict[str, str | None] = {
    "support-bot@v1": "v1 says: the Enterprise plan.",
    "support-bot@v2": "v2 says: the Enterprise plan, with priority support.",
    "support-bot@v3": None,
    "support-bot@same": "Any plan.",
}


def _sse(model: str, text: str) -> bytes:
    chunks: list[dict[str, object]] = [
        {"model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        {"model": model, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}},
    ]
    lines = [f"data: {json.dumps({'id': 'x', 'object': 'chat.completion.chunk'} | chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def service(table: Path, *, reads_table: bool = True) -> httpx.MockTransport:
    """vLLM behind the route middleware: the public name becomes the version the table file names."""
    pinned = parse_table(table.read_text()) if table.exists() else {}

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": BASE, "root": "/m", "parent": None}]})
        if request.method == "GET":
            return httpx.Response(200, text="")  # /metrics: no LoRA activity to show
        asked = json.loads(request.content)["model"]
        routes = (parse_table(table.read_text()) if table.exists() else {}) if reads_table else pinned
        status, model = decide(asked, frozenset({BASE}), routes)
        if status:
            return httpx.Response(status, json={"error": {"message": model, "code": status}})
        text = "Any plan." if model == BASE else VERSIONS.get(model)
        if text is None:
            return httpx.Response(404, json={"error": {"message": f"The model `{model}` does not exist.", "code": 404}})
        return httpx.Response(200, content=_sse(model, text), headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handle)


def _table(path: Path, routes: Mapping[str, Route]) -> FileRouteStore:
    store = FileRouteStore(path)
    if routes:
        path.write_text(RouteTable(routes).to_text())
    return store


def _promote(
    store: FileRouteStore,
    request: PromoteRequest,
    *,
    reads_table: bool = True,
    tensors: Callable[[str], TensorPlace | None] | None = None,
) -> PromotionReport:
    class Locator:
        def locate(self, served_as: str, adapter_root: str | None, base_root: str | None) -> TensorPlace | None:
            return tensors(served_as) if tensors else None

    seams = PromoteSeams(
        sleep=lambda _s: None,
        settle_s=0,
        tensors=Locator() if tensors else LocalTensors(),
        reach=Reach(transport=service(store.path, reads_table=reads_table)),
    )
    return promote_adapter(TARGET, OPTIONS, store, request, seams)


def test_a_version_that_passes_its_gate_takes_the_public_name(tmp_path: Path) -> None:
    """v2 is checked under support-bot@v2 (no user asks for it), then routed; the public name answers v2."""
    store = _table(tmp_path / "routes.json", {"support-bot": Route("v1")})
    report = _promote(store, PromoteRequest("support-bot", "v2", PROBES))
    assert report.exit_code == 0, report.problems
    assert (report.promoted, report.previous) == (True, "v1")
    assert report.check is not None
    assert report.check.served_as == "support-bot@v2"
    assert report.confirmed == ["support-bot@v2"] * 3
    table = store.read()
    assert table.routes["support-bot"].version == "v2"
    assert table.routes["support-bot"].previous == "v1"


@pytest.mark.parametrize(
    ("version", "why"),
    [("v3", "HTTP 404"), ("same", "changes nothing"), ("v9", "HTTP 404")],
)
def test_a_failing_version_never_takes_the_public_name(tmp_path: Path, version: str, why: str) -> None:
    """Unloadable (v3), answering like the base (same) or never imported (v9): the table is not touched and
    the previous version keeps every request; the report says why."""
    path = tmp_path / "routes.json"
    store = _table(path, {"support-bot": Route("v1")})
    before = path.read_bytes()
    probes = () if version == "same" else PROBES
    report = _promote(store, PromoteRequest("support-bot", version, probes))
    assert report.exit_code == 1
    assert not report.promoted
    assert path.read_bytes() == before
    assert "support-bot still serves v1" in report.problems[0]
    assert any(why in problem for problem in report.problems)


def test_a_wrong_shaped_version_is_refused_by_its_tensor_check(tmp_path: Path) -> None:
    """A lora_B of 96 rows for a 128-wide projection answers (vLLM 0.32 loads it) but must not be promoted."""
    from tests.components.safetensors_files import lora_tensors, safetensors_bytes
    from tests.components.test_adapter_import import SHAPES

    folder = tmp_path / "support-bot@v2"
    folder.mkdir()
    tensors = lora_tensors(SHAPES, 8, ("q_proj",))
    tensors["base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight"] = (96, 8)
    (folder / "adapter_model.safetensors").write_bytes(safetensors_bytes(tensors))
    config = {"peft_type": "LORA", "r": 8, "target_modules": ["q_proj"], "base_model_name_or_path": "/m"}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    store = _table(tmp_path / "routes.json", {"support-bot": Route("v1")})
    report = _promote(
        store,
        PromoteRequest("support-bot", "v2", PROBES, rank=8),
        tensors=lambda _name: TensorPlace(LocalFiles(folder), SHAPES, "the tiny model"),
    )
    assert report.exit_code == 1
    assert any("is 96x8, expected 128x8" in problem for problem in report.problems)
    assert store.read().routes["support-bot"].version == "v1"


def test_the_first_version_of_a_new_adapter_creates_the_table(tmp_path: Path) -> None:
    """A new adapter serves nothing under its name until its first promotion; then only its gated version."""
    store = _table(tmp_path / "routes.json", {})
    report = _promote(store, PromoteRequest("support-bot", "v1", PROBES))
    assert report.exit_code == 0, report.problems
    assert report.previous is None
    assert store.read().routes["support-bot"] == Route("v1", None, report_time(store))


def report_time(store: FileRouteStore) -> str:
    return store.read().routes["support-bot"].promoted_at


def test_promoting_the_serving_version_again_changes_nothing(tmp_path: Path) -> None:
    """The deploy workflow promotes every declared adapter after each `pulumi up`; most already serve."""
    path = tmp_path / "routes.json"
    store = _table(path, {"support-bot": Route("v2", "v1")})
    before = path.read_bytes()
    report = _promote(store, PromoteRequest("support-bot", "v2", PROBES))
    assert (report.exit_code, report.already_serving, report.check) == (0, True, None)
    assert path.read_bytes() == before


def test_rollback_returns_to_the_version_it_replaced(tmp_path: Path) -> None:
    """The old version's folder stays and answers: going back is one gated write."""
    store = _table(tmp_path / "routes.json", {"support-bot": Route("v2", "v1")})
    report = _promote(store, PromoteRequest("support-bot", "v2", PROBES, rollback=True))
    assert report.exit_code == 0, report.problems
    assert store.read().routes["support-bot"].version == "v1"


def test_replicas_that_do_not_read_the_table_fail_the_promotion(tmp_path: Path) -> None:
    """A table the service cannot read (a missing grant) must not pass as a promotion that happened."""
    store = _table(tmp_path / "routes.json", {"support-bot": Route("v1")})
    report = _promote(store, PromoteRequest("support-bot", "v2", PROBES), reads_table=False)
    assert report.exit_code == 1
    assert "still answered as support-bot@v1" in report.problems[0]


def test_a_table_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    """Two promotions at once (a person and the workflow) must not drop each other's adapter."""
    path = tmp_path / "routes.json"
    store = _table(path, {"support-bot": Route("v1")})
    table = store.read()
    path.write_text(RouteTable({"support-bot": Route("v1"), "sql-writer": Route("v1")}).to_text())
    with pytest.raises(RouteConflictError):
        store.write(table.with_route("support-bot", Route("v2", "v1")))
    assert "sql-writer" in store.read().routes
