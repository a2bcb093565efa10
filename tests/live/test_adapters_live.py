"""LoRA adapter versions on a real vLLM 0.32 (CPU) server, started the way a stack starts it: the launcher
with the admin-route guard and the route middleware, the filesystem resolver on an adapters folder of
immutable versions, the route table (a local file here, the model bucket's object in a stack), the API key,
and the LoRA flags the settings derive.

Skipped unless ``make test-live`` starts servers (VERIFY_LIVE_START=1). The adapters are built locally with
PEFT in the vLLM environment (tests/live/make_tiny_adapter.py) and imported by the import job's own
``run_import`` (its checks, its order of writes), except the wrong-shaped one, placed by hand as a person
could. Promotions are ``gemma-verify adapters promote``'s own function against the running server.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from job_scripts.import_weights import (
    ADAPTER_CONFIG,
    AdapterCheck,
    AdapterMismatchError,
    CopyFailedError,
    Destination,
    Readable,
    SourceChangedError,
    SourceFile,
    StoredObject,
    run_import,
)
from serving.adapter_routes_runtime import REFRESH_ENV, ROUTES_ENV
from serving.adapter_versions import Route, RouteTable
from serving.lora import (
    ADAPTERS_FOLDER,
    ROUTES_MIDDLEWARE,
    ROUTES_MODULE,
    ROUTES_SOURCE,
    derive_lora_limits,
    resolver_env,
    routes_env,
)
from serving.lora_shapes import layer_shapes
from serving.route_guard import GuardConfig, guard_args, launcher_source
from tests.live.server import HERE, SERVED_NAME, VLLM_CLI, Home, RunningServer, ServerError, start, stop
from verify.adapters.promote import PromoteRequest, PromoteSeams, promote_adapter
from verify.adapters.routes import FileRouteStore
from verify.adapters.run import AdaptersOptions, DeclaredAdapter, Probe, check_adapter, list_adapters
from verify.endpoint import AuthKind, Target

pytestmark = pytest.mark.live

API_KEY = "live-lora-key"
TRAINED_ON = "acme/tiny-gemma"
# vLLM 0.32's CPU build crashed its engine on the first LoRA forward pass with bf16 weights; float32 runs.
CPU_DTYPE = ("--dtype", "float32")
# The replicas' refresh interval for this server (a stack's default is 10 s).
REFRESH_S = 1.0
PROMPT = "The quick brown fox"
MAX_TOKENS = 12
# Routes runtime LoRA updating adds (vllm/entrypoints/serve/lora/api_router.py, SageMaker's /adapters), and
# SageMaker's way around the key: refused by the route guard, as every route outside its allowlist.
ADMIN_ROUTES = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/adapters", "/invocations")


class LocalFolder:
    """A folder on disk as the import job's source and destination (the job's two small interfaces).

    `cut_after`: the copy of the weights stops after that many bytes (a dropped connection); `rewrite`: the
    source's config is replaced while its weights are copied (a training job saving again)."""

    def __init__(self, root: Path, *, cut_after: int | None = None, rewrite: bytes | None = None) -> None:
        self.root = root
        self.uri = f"file://{root}"
        self.cut_after = cut_after
        self.rewrite = rewrite

    def read_text(self, name: str) -> str | None:
        path = self.root / name
        return path.read_text() if path.exists() else None

    def write_text(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def list(self) -> dict[str, StoredObject]:
        if not self.root.is_dir():
            return {}
        return {p.name: StoredObject(p.stat().st_size, None) for p in self.root.iterdir()}

    def delete(self, name: str) -> None:
        (self.root / name).unlink(missing_ok=True)

    def upload(self, name: str, stream: Readable, version: str) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / name).write_bytes(stream.read())

    def pinned_revision(self) -> str | None:
        return None

    def manifest(self) -> dict[str, SourceFile]:
        return {p.name: SourceFile(p.stat().st_size, str(p.stat().st_mtime_ns)) for p in self.root.iterdir()}

    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes:
        with (self.root / name).open("rb") as stream:
            stream.seek(start)
            return stream.read(length)

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        data = (self.root / name).read_bytes()
        if name.endswith(".safetensors") and self.cut_after is not None:
            destination.upload(name, io.BytesIO(data[: self.cut_after]), file.version)
            raise ConnectionError("the connection was cut mid-copy")
        destination.upload(name, io.BytesIO(data), file.version)
        if name.endswith(".safetensors") and self.rewrite is not None:
            time.sleep(0.01)  # a new modification time: the source's listing changes
            (self.root / ADAPTER_CONFIG).write_bytes(self.rewrite)


@dataclass(frozen=True)
class Live:
    server: RunningServer
    home: Home
    sources: Path
    adapters: Path
    routes: FileRouteStore


def _build(
    home: Home, out: Path, *, rank: int, base: str | None = TRAINED_ON, seed: int = 1, cut: int | None = None
) -> None:
    command = [str(home.python), str(HERE / "make_tiny_adapter.py"), str(home.model), str(out), "--rank", str(rank)]
    command += ["--seed", str(seed), *(["--base", base] if base else []), *(["--cut-rows", str(cut)] if cut else [])]
    subprocess.run(command, check=True, capture_output=True, timeout=300)


def _check(home: Home, version: str, *, rank: int = 8) -> AdapterCheck:
    """What a stack's import job is handed for this version of support-bot, on the tiny model."""
    shapes = layer_shapes(json.loads((home.model / "config.json").read_text()))
    return AdapterCheck(
        "support-bot",
        (TRAINED_ON,),
        rank,
        ("q_proj", "v_proj"),
        str(home.model),
        version,
        shapes.layer_kinds,
        shapes.kind_shapes,
    )


def _import(live: Live, source: LocalFolder, version: str) -> None:
    destination = LocalFolder(live.adapters / f"support-bot@{version}")
    run_import(
        source, destination, workers=1, log=lambda *_a: None, sleep=lambda _s: None, adapter=_check(live.home, version)
    )


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    if os.environ.get("VERIFY_LIVE_START") != "1":
        pytest.skip("no live vLLM: run `make test-live` (VERIFY_LIVE_START=1) to start one")
    home = Home.from_env()
    root = tmp_path_factory.mktemp("bucket")
    sources = tmp_path_factory.mktemp("training")
    adapters = root / ADAPTERS_FOLDER
    adapters.mkdir()
    for name, seed in (("v1", 1), ("v2", 2)):
        _build(home, sources / name, rank=8, seed=seed)
    _build(home, sources / "wrong-shape", rank=8, seed=3, cut=96)
    # Mismatched, placed by hand: trained on another model (the resolver refuses it), a rank above the server's,
    # and a wrong-shaped one with its config pointed at the served model (vLLM 0.32 loads it).
    _build(home, adapters / "support-bot@other-base", rank=8, base="acme/another-model", seed=4)
    _build(home, adapters / "support-bot@too-wide", rank=16, base=str(home.model), seed=5)
    _build(home, adapters / "support-bot@bad-shape", rank=8, base=str(home.model), seed=3, cut=96)
    store = FileRouteStore(root / "adapter-routes.json")
    live = Live(RunningServer("", None), home, sources, adapters, store)
    _import(live, LocalFolder(sources / "v1"), "v1")
    store.write(RouteTable({}, 0).with_route("support-bot", Route("v1")))
    limits = derive_lora_limits([8])
    # A folder outside adapters/ holding a valid adapter: what a path-like `model` made the resolver load.
    _build(home, root / "outside" / "evil", rank=8, base=str(home.model), seed=6)
    source = launcher_source(((ROUTES_MODULE, ROUTES_SOURCE),))
    launcher = f"import sys; sys.path.insert(0, {str(VLLM_CLI.parent)!r}); import {VLLM_CLI.stem}\n{source}"
    resolver = resolver_env(str(root))
    config = GuardConfig(
        names=(SERVED_NAME, "support-bot"),
        key="required",
        adapters_dir=resolver["VLLM_LORA_RESOLVER_CACHE_DIR"],
        versioned=True,
    )
    env = {
        **resolver_env(str(root)),
        **routes_env([SERVED_NAME]),
        ROUTES_ENV: store.location,
        REFRESH_ENV: str(REFRESH_S),
        "VLLM_API_KEY": API_KEY,
    }
    try:
        server = start(
            home,
            launcher=("-c", launcher, config.to_json()),
            extra_args=(*CPU_DTYPE, *limits.serve_args(), *guard_args(ROUTES_MIDDLEWARE)),
            env=env,
        )
    except ServerError as exc:
        pytest.fail(f"the LoRA vLLM server could not start: {exc}")
    try:
        yield Live(server, home, sources, adapters, store)
    finally:
        stop(server)


def _target(live: Live) -> Target:
    return Target(base_url=live.server.base_url, model=SERVED_NAME, auth_kind=AuthKind.API_KEY, source="live test")


def _ask(live: Live, model: str) -> tuple[int, str, str]:
    """(status, the answering model, its text) of one greedy completion."""
    body = {"model": model, "prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0}
    answer = httpx.post(
        f"{live.server.base_url}/v1/completions", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120
    )
    if answer.status_code != 200:
        return answer.status_code, "", answer.text
    data = answer.json()
    return 200, str(data["model"]), str(data["choices"][0]["text"])


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)


@pytest.mark.parametrize("route", ADMIN_ROUTES)
def test_admin_routes_are_refused_even_with_the_key(live: Live, route: str) -> None:
    """With runtime LoRA updating on, vLLM adds load/unload routes (SageMaker's outside the API key): refused."""
    body = {"lora_name": "x", "lora_path": "/etc", "name": "x", "src": "/etc"}
    answer = httpx.post(f"{live.server.base_url}{route}", json=body, headers={"Authorization": f"Bearer {API_KEY}"})
    assert answer.status_code == 403, answer.text
    assert httpx.delete(f"{live.server.base_url}/adapters/support-bot").status_code == 403


def test_requests_without_the_key_are_still_refused(live: Live) -> None:
    """The launcher must not weaken vLLM's own API-key check."""
    assert httpx.post(f"{live.server.base_url}/v1/models", json={}).status_code == 403  # GET is the route
    assert httpx.get(f"{live.server.base_url}/v1/models").status_code == 401


@pytest.mark.parametrize("model", ["../outside/evil", "/etc", "support-bot@../../outside/evil", "undeclared"])
def test_a_model_that_is_no_declared_name_loads_nothing(live: Live, model: str) -> None:
    """`model: ../outside/evil` made the resolver load a folder outside adapters/ (and `adapters list` listed
    it): the route guard refuses any name that is not the served model, a declared adapter or one of its
    versions, before the route table or vLLM's resolver sees it."""
    status, _, text = _ask(live, model)
    assert status == 404, text
    listed = httpx.get(f"{live.server.base_url}/v1/models", headers={"Authorization": f"Bearer {API_KEY}"}).json()
    assert all("evil" not in str(entry) for entry in listed["data"])


@pytest.mark.usefixtures("api_key")
def test_the_public_name_answers_as_the_version_the_table_names(live: Live) -> None:
    """`support-bot` reaches vLLM as support-bot@v1 (the folder the import job wrote); check passes, its tensors
    fit the model, and list shows the version loaded from that folder with the served model as its base."""
    report = check_adapter(
        _target(live),
        AdaptersOptions(max_tokens=12),
        DeclaredAdapter(name="support-bot", probes=(Probe(prompt="hello"),)),
    )
    assert report.passed, report.problems
    assert report.served_as == "support-bot@v1"
    assert report.tensors is not None
    assert report.tensors.tensors == 8  # q_proj and v_proj, A and B, two layers
    assert report.tensors.shapes_from is not None
    listing = list_adapters(_target(live), AdaptersOptions(), ["support-bot"])
    loaded = {adapter.name: adapter for adapter in listing.loaded}
    written = json.loads((Path(loaded["support-bot@v1"].path or "") / ADAPTER_CONFIG).read_text())
    assert written["base_model_name_or_path"] == str(live.home.model)


@pytest.mark.usefixtures("api_key")
def test_each_failed_import_leaves_the_served_version_answering(live: Live) -> None:
    """Check fails, copy cut, source changed during the copy: the new version is never loadable (404 under its
    name) and support-bot keeps answering as support-bot@v1."""
    broken = live.sources / "wrong-shape"
    with pytest.raises(AdapterMismatchError, match=r"96x8, expected 128x8"):
        _import(live, LocalFolder(broken), "v2-check")
    with pytest.raises(CopyFailedError):
        _import(live, LocalFolder(live.sources / "v2", cut_after=200), "v2-cut")
    config = (live.sources / "v2" / ADAPTER_CONFIG).read_bytes()
    with pytest.raises(SourceChangedError):
        _import(live, LocalFolder(live.sources / "v2", rewrite=config + b"\n"), "v2-changed")
    for version in ("v2-check", "v2-cut", "v2-changed"):
        status, _, text = _ask(live, f"support-bot@{version}")
        assert status == 404, text
        status, model, _ = _ask(live, "support-bot")
        assert (status, model) == (200, "support-bot@v1")


@pytest.mark.usefixtures("api_key")
def test_a_wrong_shaped_adapter_is_served_by_vllm_and_refused_by_check(live: Live) -> None:
    """vLLM 0.32 loads a lora_B of 96 rows for the 128-wide q_proj; `adapters check` names the tensor."""
    status, model, text = _ask(live, "support-bot@bad-shape")
    report = check_adapter(
        _target(live),
        AdaptersOptions(max_tokens=8),
        DeclaredAdapter(name="support-bot@bad-shape", probes=(Probe(prompt="hi"),)),
    )
    assert not report.passed
    if status == 200:  # what the issue saw: vLLM serves it, so only the tensor check can refuse it
        assert model == "support-bot@bad-shape"
        assert any("tensors:" in problem and "96x8, expected 128x8" in problem for problem in report.problems), (
            report.problems
        )
    else:
        pytest.fail(f"vLLM refused the wrong-shaped adapter itself ({status}: {text[:200]}); update docs/adapters.md")


@pytest.mark.usefixtures("api_key")
@pytest.mark.parametrize(
    ("version", "status"), [("other-base", "HTTP 404"), ("too-wide", "HTTP 400"), ("absent", "HTTP 404")]
)
def test_mismatched_versions_fail_check_with_the_servers_answer(live: Live, version: str, status: str) -> None:
    """A version of another base, of a rank above --max-lora-rank, or never imported fails with what vLLM said."""
    report = check_adapter(
        _target(live),
        AdaptersOptions(max_tokens=8),
        DeclaredAdapter(name=f"support-bot@{version}", probes=(Probe(prompt="hi"),)),
    )
    assert not report.passed
    assert status in report.problems[0], report.problems


@dataclass(frozen=True)
class Answer:
    started: float
    ended: float
    status: int
    model: str
    text: str


def _load(live: Live, stop_at: threading.Event, answers: list[Answer]) -> None:
    while not stop_at.is_set():
        started = time.monotonic()
        status, model, text = _ask(live, "support-bot")
        answers.append(Answer(started, time.monotonic(), status, model, text))


class TimedStore(FileRouteStore):
    """The route table, remembering when promote wrote it."""

    written_at: float | None = None

    def write(self, table: RouteTable) -> None:
        super().write(table)
        self.written_at = time.monotonic()


@pytest.mark.usefixtures("api_key")
def test_a_swap_under_load_answers_each_request_from_one_version(live: Live) -> None:
    """The Done-when of issue 49: v2 is imported beside v1 and promoted while requests run on `support-bot`.
    Every answer names one version and carries that version's text (never the other's); answers finished
    before the table write are v1's, answers begun a refresh after it are v2's; v1 keeps answering under its
    versioned name (draining). A failing v3 never takes the name: the table stays, v2 keeps answering."""
    _import(live, LocalFolder(live.sources / "v2"), "v2")
    reference = {version: _ask(live, f"support-bot@{version}") for version in ("v1", "v2")}
    assert all(status == 200 for status, _, _ in reference.values()), reference
    assert reference["v1"][2] != reference["v2"][2]  # the two versions answer differently at temperature 0
    store = TimedStore(live.routes.path)
    answers: list[Answer] = []
    stop_at = threading.Event()
    workers = [threading.Thread(target=_load, args=(live, stop_at, answers), daemon=True) for _ in range(3)]
    for worker in workers:
        worker.start()
    time.sleep(3)  # requests on v1 before the swap
    report = promote_adapter(
        _target(live),
        AdaptersOptions(max_tokens=12),
        store,
        PromoteRequest("support-bot", "v2", (Probe(prompt="hello there"),), rank=8),
        PromoteSeams(settle_s=REFRESH_S + 2),
    )
    time.sleep(3)  # requests on v2 after it
    stop_at.set()
    for worker in workers:
        worker.join(timeout=180)
    assert report.exit_code == 0, report.problems
    assert report.confirmed == ["support-bot@v2"] * 3
    assert store.written_at is not None
    assert all(answer.status == 200 for answer in answers), [a.text for a in answers if a.status != 200][:3]
    for answer in answers:
        version = answer.model.removeprefix("support-bot@")
        assert version in {"v1", "v2"}, answer.model
        other = "v2" if version == "v1" else "v1"
        assert answer.text != reference[other][2], f"a {version} answer carries {other}'s text"
    before = [a for a in answers if a.ended < store.written_at]
    after = [a for a in answers if a.started > store.written_at + REFRESH_S + 1]
    assert before
    assert after
    assert {a.model for a in before} == {"support-bot@v1"}
    assert {a.model for a in after} == {"support-bot@v2"}
    assert _ask(live, "support-bot@v1")[:2] == (200, "support-bot@v1")  # the old version drains, still there

    failing = promote_adapter(
        _target(live),
        AdaptersOptions(max_tokens=12),
        store,
        PromoteRequest("support-bot", "other-base", (Probe(prompt="hello there"),), rank=8),
        PromoteSeams(settle_s=0),
    )
    assert failing.exit_code == 1
    assert "support-bot still serves v2" in failing.problems[0]
    assert live.routes.read().routes["support-bot"].version == "v2"
    assert _ask(live, "support-bot")[:2] == (200, "support-bot@v2")
