"""LoRA adapters on a real vLLM 0.32 (CPU) server, started the way a stack starts it: the launcher with the
route guard, the filesystem resolver on an adapters folder, the API key, and the LoRA flags the settings derive.

Skipped unless ``make test-live`` starts servers (VERIFY_LIVE_START=1). The adapters are built locally with PEFT
in the vLLM environment (tests/live/make_tiny_adapter.py); one goes through the import job's own
``finalise_adapter`` (trained on a Hub-style base name, rewritten to the served path), as in a deployment.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from job_scripts.import_weights import (
    ADAPTER_CONFIG,
    AdapterCheck,
    Destination,
    Readable,
    SourceFile,
    StoredObject,
    Wanted,
    finalise_adapter,
)
from serving.lora import ADAPTERS_FOLDER, derive_lora_limits, resolver_env
from serving.route_guard import GuardConfig, guard_args, launcher_source
from tests.live.server import HERE, SERVED_NAME, VLLM_CLI, Home, RunningServer, ServerError, start, stop
from verify.adapters.run import AdaptersOptions, DeclaredAdapter, Probe, check_adapter, list_adapters
from verify.target import AuthKind, Target

pytestmark = pytest.mark.live

API_KEY = "live-lora-key"
TRAINED_ON = "acme/tiny-gemma"
# vLLM 0.32's CPU build crashed its engine on the first LoRA forward pass with bf16 weights; float32 runs.
CPU_DTYPE = ("--dtype", "float32")
# Routes runtime LoRA updating adds (vllm/entrypoints/serve/lora/api_router.py, SageMaker's /adapters).
ADMIN_ROUTES = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/adapters", "/invocations")
# The declared adapters: the two mismatched ones are declared so that vLLM's own refusal is what they meet.
DECLARED = ("support-bot", "other-base", "too-wide")


class LocalFolder:
    """A folder on disk as the import job's source and destination (the job's two small interfaces)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.uri = f"file://{root}"

    def read_text(self, name: str) -> str | None:
        path = self.root / name
        return path.read_text() if path.exists() else None

    def write_text(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def list(self) -> dict[str, StoredObject]:
        return {p.name: StoredObject(p.stat().st_size) for p in self.root.iterdir()}

    def delete(self, name: str) -> None:
        (self.root / name).unlink(missing_ok=True)

    def upload(self, name: str, stream: Readable, version: str) -> None:
        (self.root / name).write_bytes(stream.read())

    def pinned_revision(self) -> str | None:
        return None

    def manifest(self) -> dict[str, SourceFile]:
        return {name: SourceFile(obj.size, "local") for name, obj in self.list().items()}

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        with (self.root / name).open("rb") as stream:
            destination.upload(name, stream, file.version)


def _build(home: Home, out: Path, *, rank: int, base: str | None = None, seed: int = 1) -> None:
    command = [str(home.python), str(HERE / "make_tiny_adapter.py"), str(home.model), str(out), "--rank", str(rank)]
    command += ["--seed", str(seed), *(["--base", base] if base else [])]
    subprocess.run(command, check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def lora_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    if os.environ.get("VERIFY_LIVE_START") != "1":
        pytest.skip("no live vLLM: run `make test-live` (VERIFY_LIVE_START=1) to start one")
    home = Home.from_env()
    root = tmp_path_factory.mktemp("bucket")
    adapters = root / ADAPTERS_FOLDER
    adapters.mkdir()
    # As the import job leaves it: trained on a Hub name, config rewritten to the served model's path.
    _build(home, adapters / "support-bot", rank=8, base=TRAINED_ON)
    folder = LocalFolder(adapters / "support-bot")
    check = AdapterCheck("support-bot", (TRAINED_ON,), 8, ("q_proj", "v_proj"), str(home.model))
    finalise_adapter(folder, folder, check, Wanted(folder.uri, "local"))
    # Mismatched: trained on another model (the resolver refuses it), and a rank above the server's.
    _build(home, adapters / "other-base", rank=8, base="acme/another-model", seed=2)
    _build(home, adapters / "too-wide", rank=16, seed=3)
    # Outside the adapters folder: what a path-like `model` made the resolver load (issue 46).
    _build(home, root / "outside" / "evil", rank=8, seed=4)
    limits = derive_lora_limits([8])
    launcher = f"import sys; sys.path.insert(0, {str(VLLM_CLI.parent)!r}); import {VLLM_CLI.stem}\n{launcher_source()}"
    config = GuardConfig(
        names=(SERVED_NAME, *DECLARED),
        key="required",
        adapters_dir=resolver_env(str(root))["VLLM_LORA_RESOLVER_CACHE_DIR"],
    )
    try:
        server = start(
            home,
            launcher=("-c", launcher, config.to_json()),
            extra_args=(*CPU_DTYPE, *limits.serve_args(), *guard_args()),
            env={**resolver_env(str(root)), "VLLM_API_KEY": API_KEY},
        )
    except ServerError as exc:
        pytest.fail(f"the LoRA vLLM server could not start: {exc}")
    try:
        yield server
    finally:
        stop(server)


def _target(server: RunningServer) -> Target:
    return Target(base_url=server.base_url, model=server.model, auth_kind=AuthKind.API_KEY, source="live test")


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)


@pytest.mark.parametrize("route", ADMIN_ROUTES)
def test_admin_routes_are_refused_even_with_the_key(lora_server: RunningServer, route: str) -> None:
    """With runtime LoRA updating on, vLLM adds load/unload routes (SageMaker's outside the API key): refused."""
    body = {"lora_name": "x", "lora_path": "/etc", "name": "x", "src": "/etc"}
    answer = httpx.post(f"{lora_server.base_url}{route}", json=body, headers={"Authorization": f"Bearer {API_KEY}"})
    assert answer.status_code == 403, answer.text
    answer = httpx.delete(f"{lora_server.base_url}/adapters/support-bot")
    assert answer.status_code == 403


@pytest.mark.parametrize("model", ["../outside/evil", "/etc", "adapters/../../outside/evil"])
def test_a_path_like_model_loads_no_folder(lora_server: RunningServer, model: str) -> None:
    """`model: ../outside/evil` made the resolver load a folder outside adapters/, and `adapters list` listed it
    as loaded: the guard refuses the name before vLLM resolves it, so nothing loads."""
    auth = {"Authorization": f"Bearer {API_KEY}"}
    body = {"model": model, "prompt": "hi", "max_tokens": 4}
    answer = httpx.post(f"{lora_server.base_url}/v1/completions", json=body, headers=auth, timeout=120)
    assert answer.status_code == 404, answer.text
    listed = httpx.get(f"{lora_server.base_url}/v1/models", headers=auth).json()["data"]
    assert all("evil" not in entry["id"] and "evil" not in str(entry.get("root")) for entry in listed)


def test_requests_without_the_key_are_still_refused(lora_server: RunningServer) -> None:
    """The launcher must not weaken vLLM's own API-key check."""
    answer = httpx.post(f"{lora_server.base_url}/v1/models", json={})
    assert answer.status_code == 403  # not a route the guard admits (GET is)
    answer = httpx.get(f"{lora_server.base_url}/v1/models")
    assert answer.status_code == 401


@pytest.mark.usefixtures("api_key")
def test_adapter_from_the_folder_answers_under_its_name_and_passes_check(lora_server: RunningServer) -> None:
    """The resolver loads the adapter on its first request; `adapters check` passes; `list` shows it loaded."""
    report = check_adapter(
        _target(lora_server),
        AdaptersOptions(max_tokens=12),
        DeclaredAdapter(name="support-bot", probes=(Probe(prompt="hello there"),)),
    )
    assert report.passed, report.problems
    assert report.probes[0].answered_as == "support-bot"
    listing = list_adapters(_target(lora_server), AdaptersOptions(), ["support-bot"])
    assert [adapter.name for adapter in listing.loaded] == ["support-bot"]
    written = json.loads((Path(listing.loaded[0].path or "") / ADAPTER_CONFIG).read_text())
    assert written["base_model_name_or_path"] == str(Home.from_env().model)


@pytest.mark.usefixtures("api_key")
@pytest.mark.parametrize(
    ("name", "status"), [("other-base", "HTTP 404"), ("too-wide", "HTTP 400"), ("absent", "HTTP 404")]
)
def test_mismatched_adapters_fail_check_with_the_servers_answer(
    lora_server: RunningServer, name: str, status: str
) -> None:
    """An adapter of another base, of a rank above --max-lora-rank, or missing, fails with what vLLM said."""
    report = check_adapter(
        _target(lora_server), AdaptersOptions(max_tokens=8), DeclaredAdapter(name=name, probes=(Probe(prompt="hi"),))
    )
    assert not report.passed
    assert status in report.problems[0], report.problems
