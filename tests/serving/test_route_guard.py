"""The route guard in front of vLLM (serving/guard_runtime.py), driven in-process as ASGI, as vLLM drives it.

Each test reproduces a door found open on a real vLLM 0.32 (issue 46) against the guard alone, fast; the same
doors are tried against a real vLLM CPU server in tests/live/test_route_guard_live.py.
"""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from serving import guard_runtime
from serving.guard_runtime import (
    MAX_BODY_BYTES,
    REFUSED_EXIT,
    GuardConfig,
    Message,
    Receive,
    RouteGuard,
    Scope,
    Send,
    configure,
    env_refusal,
    launch,
)
from serving.route_guard import GUARD_MIDDLEWARE, admitted_paths, guard_args, launcher_command, launcher_source
from serving.route_guard import GuardConfig as PlanConfig

KEY = "guard-test-key"
SERVED = "gemma-4-12b-it"
ADAPTER = "support-bot"
# Routes vLLM 0.32 answers without the key (or with dev mode), and paths that only look like served ones.
REFUSED_PATHS = [
    ("POST", "/invocations"),
    ("POST", "/generative_scoring"),
    ("POST", "/scale_elastic_ep"),
    ("POST", "/is_scaling_elastic_ep"),
    ("GET", "/server_info"),
    ("POST", "/reset_prefix_cache"),
    ("POST", "/pause"),
    ("POST", "/sleep"),
    ("POST", "/wake_up"),
    ("POST", "/collective_rpc"),
    ("POST", "/update_weights"),
    ("GET", "/load"),
    ("POST", "/detokenize"),
    ("POST", "/v1/load_lora_adapter"),
    ("POST", "/v1/unload_lora_adapter"),
    ("POST", "/adapters"),
    ("GET", "/ping"),
    ("GET", "/docs"),
    ("GET", "/openapi.json"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/embeddings"),
    ("POST", "/v1/chat/completions/"),
    ("GET", "/v1/chat/completions"),
    ("OPTIONS", "/v1/chat/completions"),
    ("POST", "//v1/chat/completions"),
    ("GET", "/metrics/"),
]


class Recorder:
    """The app behind the guard (vLLM's): records what reached it and the body it received."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        if scope["type"] == "http":
            message = await receive()
            body = message.get("body", b"")
        self.calls.append((scope.get("path", scope["type"]), body))
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})


def _config(**overrides: Any) -> GuardConfig:
    data: dict[str, Any] = {"names": [SERVED, ADAPTER], "key": "required", "scrapers": "loopback", "clients": []}
    data.update(overrides)
    return GuardConfig(data)


@pytest.fixture
def guard() -> Iterator[tuple[RouteGuard, Recorder]]:
    app = Recorder()
    configure(_config(), KEY)
    yield RouteGuard(app), app
    configure(_config(), KEY)


async def _call(
    guard: RouteGuard,
    method: str,
    path: str,
    *,
    body: bytes = b"",
    key: str | None = None,
    client: str = "10.1.2.3",
    chunks: int = 1,
    kind: str = "http",
) -> tuple[int, dict[str, Any]]:
    headers = [(b"content-type", b"application/json")]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    scope = {"type": kind, "method": method, "path": path, "headers": headers, "client": (client, 40000)}
    size = max(1, len(body) // chunks + 1)
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [{"type": "http.request", "body": part, "more_body": i < len(parts) - 1} for i, part in enumerate(parts)]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    if kind != "http":
        return (403 if sent == [{"type": "websocket.close", "code": 1008}] else 0), {}
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, (json.loads(payload) if payload.startswith(b"{") else {"raw": payload})


def _chat(model: Any = SERVED) -> bytes:
    return json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.mark.parametrize(("method", "path"), REFUSED_PATHS)
async def test_routes_outside_the_allowlist_are_refused_with_the_key_or_without(
    guard: tuple[RouteGuard, Recorder], method: str, path: str
) -> None:
    """/invocations answered a full completion without the key; every unlisted route, and whatever vLLM adds
    next, must be refused whoever asks, and never reach vLLM."""
    middleware, app = guard
    for key in (None, KEY):
        status, body = await _call(middleware, method, path, body=_chat(), key=key)
        assert status == 403, (path, key)
        assert "not served" in body["error"]["message"]
    assert app.calls == []


async def test_chat_with_the_key_reaches_vllm_with_its_body_intact(guard: tuple[RouteGuard, Recorder]) -> None:
    """The guard reads the body to check `model`; vLLM must still receive it whole (a streamed upload too)."""
    middleware, app = guard
    body = _chat()
    status, _ = await _call(middleware, "POST", "/v1/chat/completions", body=body, key=KEY, chunks=3)
    assert status == 200
    assert app.calls == [("/v1/chat/completions", body)]


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/models"), ("POST", "/tokenize"), ("GET", "/version"), ("GET", "/metrics")]
)
async def test_served_routes_outside_vllms_prefixes_need_the_key(
    guard: tuple[RouteGuard, Recorder], method: str, path: str
) -> None:
    """vLLM's key covers /v1 only: /tokenize, /version and /metrics answered anyone who reached the port."""
    middleware, app = guard
    status, _ = await _call(middleware, method, path, body=_chat())
    assert status == 401
    status, _ = await _call(middleware, method, path, body=_chat(), key="wrong")
    assert status == 401
    status, _ = await _call(middleware, method, path, body=_chat(), key=KEY)
    assert status == 200
    assert len(app.calls) == 1


async def test_health_answers_probes_without_a_key(guard: tuple[RouteGuard, Recorder]) -> None:
    """Cloud Run's, the kubelet's and the load balancer's probes carry no key."""
    middleware, _ = guard
    assert (await _call(middleware, "GET", "/health"))[0] == 200


@pytest.mark.parametrize(
    "model", ["../support-bot", "/etc", "/tmp/evil", "adapters/../../x", "./support-bot", "support-bot/", "other"]
)
async def test_a_model_that_is_not_a_served_name_never_reaches_the_resolver(
    guard: tuple[RouteGuard, Recorder], model: str
) -> None:
    """vLLM's filesystem resolver joins `model` to its folder unchecked: `../x` or an absolute path loaded any
    folder holding an adapter_config.json. Only the served name and the declared adapters pass."""
    middleware, app = guard
    for path in ("/v1/chat/completions", "/v1/completions", "/tokenize"):
        status, body = await _call(middleware, "POST", path, body=_chat(model), key=KEY)
        assert status == 404
        assert body["error"]["param"] == "model"
    assert app.calls == []


@pytest.mark.parametrize("model", [SERVED, ADAPTER, None, ""])
async def test_the_served_name_an_adapter_or_no_model_pass(guard: tuple[RouteGuard, Recorder], model: Any) -> None:
    """No `model` (or null) is vLLM's served model; the guard must not refuse what vLLM serves."""
    middleware, _ = guard
    assert (await _call(middleware, "POST", "/v1/completions", body=_chat(model), key=KEY))[0] == 200


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"model": "gemma-4-12b-it", "model": "../x"}', 400),
        (b'{"model": ["../x"]}', 400),
        (b"[1, 2]", 400),
        (b"not json", 400),
        (b'\xff\xfe{"model": 1}', 400),
    ],
)
async def test_bodies_the_guard_cannot_read_as_vllm_would_are_refused(
    guard: tuple[RouteGuard, Recorder], body: bytes, status: int
) -> None:
    """A key given twice (which one would vLLM read?), a non-string `model`, or no JSON object: refused."""
    middleware, app = guard
    assert (await _call(middleware, "POST", "/v1/chat/completions", body=body, key=KEY))[0] == status
    assert app.calls == []


async def test_a_body_above_the_cap_is_refused_without_reading_it_all(guard: tuple[RouteGuard, Recorder]) -> None:
    """The guard buffers a body before vLLM does; a client must not make it hold more than the cap."""
    middleware, app = guard
    body = b'{"model": "x", "prompt": "' + b"a" * (MAX_BODY_BYTES + 1) + b'"}'
    assert (await _call(middleware, "POST", "/v1/completions", body=body, key=KEY, chunks=4))[0] == 413
    assert app.calls == []


async def test_keyless_metrics_only_from_the_collector_beside_vllm(guard: tuple[RouteGuard, Recorder]) -> None:
    """TPU VM: the collector scrapes 127.0.0.1; a client on the VPC reading /metrics needs the key."""
    middleware, _ = guard
    assert (await _call(middleware, "GET", "/metrics", client="127.0.0.1"))[0] == 200
    assert (await _call(middleware, "GET", "/metrics", client="::ffff:127.0.0.1"))[0] == 200
    assert (await _call(middleware, "GET", "/metrics", client="10.128.0.7"))[0] == 401


async def test_on_a_fleet_keyless_metrics_are_refused_from_the_client_ranges() -> None:
    """GKE: Managed Prometheus and the picker scrape without the key (their pods are all the NetworkPolicy
    admits besides the clients); a request from the proxy-only subnet or a client range needs the key."""
    app = Recorder()
    configure(_config(scrapers="network", clients=["192.168.254.0/23", "10.128.0.0/9"]), KEY)
    middleware = RouteGuard(app)
    assert (await _call(middleware, "GET", "/metrics", client="10.52.3.9"))[0] == 200
    assert (await _call(middleware, "GET", "/metrics", client="192.168.254.10"))[0] == 401
    assert (await _call(middleware, "GET", "/metrics", client="10.128.0.7"))[0] == 401
    assert (await _call(middleware, "GET", "/metrics", client="10.128.0.7", key=KEY))[0] == 200
    assert (await _call(middleware, "POST", "/v1/models", client="10.52.3.9"))[0] == 403


async def test_cloud_run_admits_the_served_routes_to_iam_checked_callers_only() -> None:
    """Cloud Run holds no vLLM key (IAM checks every caller at Google's front end): the allowlist and the model
    check still apply."""
    app = Recorder()
    configure(_config(key="none"), None)
    middleware = RouteGuard(app)
    assert (await _call(middleware, "POST", "/v1/chat/completions", body=_chat()))[0] == 200
    assert (await _call(middleware, "POST", "/invocations", body=_chat()))[0] == 403
    assert (await _call(middleware, "POST", "/v1/chat/completions", body=_chat("../x")))[0] == 404


async def test_websockets_and_lifespan(guard: tuple[RouteGuard, Recorder]) -> None:
    """vLLM's /v1/realtime WebSocket is not served; the lifespan (vLLM's start and stop) passes through."""
    middleware, app = guard
    assert (await _call(middleware, "GET", "/v1/realtime", kind="websocket"))[0] == 403
    await middleware({"type": "lifespan"}, _never, _never)
    assert app.calls == [("lifespan", b"")]


async def _never(*_args: Any) -> Any:
    raise AssertionError("not called")


def test_the_guard_refuses_to_run_unconfigured() -> None:
    """vLLM imports the middleware by name: outside the launcher it must fail the start, not serve open."""
    saved = guard_runtime._CONFIG
    guard_runtime._CONFIG = None
    try:
        with pytest.raises(RuntimeError, match="launcher"):
            RouteGuard(Recorder())
    finally:
        guard_runtime._CONFIG = saved


CONFIG = json.dumps({"names": [SERVED], "key": "required", "scrapers": "loopback"})
SERVE = ["serve", "/models/m", "--middleware", GUARD_MIDDLEWARE]


@pytest.mark.parametrize(
    ("env", "argv", "why"),
    [
        ({"VLLM_SERVER_DEV_MODE": "1"}, SERVE, "VLLM_SERVER_DEV_MODE"),
        ({"VLLM_USE_RUST_FRONTEND": "1"}, SERVE, "VLLM_USE_RUST_FRONTEND"),
        ({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}, SERVE, "VLLM_ALLOW_RUNTIME_LORA_UPDATING"),
        ({"SAGEMAKER_MODEL_PATH": "/x"}, SERVE, "SAGEMAKER_MODEL_PATH"),
        ({}, ["serve", "/models/m"], "--middleware"),
        ({}, [*SERVE, "--middleware", "other.Outer"], "outermost"),
        ({}, ["bench", "--middleware", GUARD_MIDDLEWARE], "serve"),
    ],
)
def test_the_launcher_refuses_to_start_vllm_that_would_answer_outside_the_allowlist(
    env: dict[str, str], argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dev mode, runtime LoRA updating, a frontend that replaces the guard, or vLLM without the guard: exit 78."""
    assert launch([CONFIG, *argv], {"VLLM_API_KEY": KEY, **env}) == REFUSED_EXIT
    assert why in capsys.readouterr().err


def test_the_launcher_refuses_to_start_without_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    """An empty key would be no key: the pod or node must never serve without auth."""
    assert launch([CONFIG, *SERVE], {"VLLM_API_KEY": " "}) == REFUSED_EXIT
    assert "API key" in capsys.readouterr().err


def test_the_programs_own_resolver_env_is_allowed_only_as_the_program_sets_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Declared adapters need the resolver pair; pointed anywhere else, the resolver would load other folders."""
    config = _config(adapters_dir="/models/adapters")
    good = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_LORA_RESOLVER_CACHE_DIR": "/models/adapters"}
    assert config.env_problems(good) == []
    elsewhere = {**good, "VLLM_LORA_RESOLVER_CACHE_DIR": "/"}
    assert [p.split()[0] for p in config.env_problems(elsewhere)] == ["VLLM_LORA_RESOLVER_CACHE_DIR"]
    assert _config().env_problems(good) != []
    capsys.readouterr()


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """vLLM's CLI module, recording the argv it would run with."""
    runs: list[list[str]] = []
    module = types.ModuleType("vllm.entrypoints.cli.main")
    module.main = lambda: runs.append(list(sys.argv))  # type: ignore[attr-defined]
    for name in ("vllm", "vllm.entrypoints", "vllm.entrypoints.cli"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "vllm.entrypoints.cli.main", module)
    monkeypatch.delitem(sys.modules, "gemma_serving_guard", raising=False)
    return runs


def test_the_launch_line_registers_the_guard_and_runs_vllms_serve(
    fake_vllm: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The container's `python3 -c <launcher> <config> serve ...` as the image runs it: the module vLLM imports
    by `--middleware` exists, is configured, and vLLM's CLI gets `serve` and its arguments untouched."""
    config = PlanConfig(names=(SERVED,), key="required")
    command = launcher_command(config)
    assert command[:2] == ["python3", "-c"]
    assert command[3:] == [config.to_json(), "serve"]
    args = ["/models/m", "--speculative-config", '{"method": "ngram"}', *guard_args()]
    monkeypatch.setattr(sys, "argv", ["-c", *command[3:], *args])
    for name in [name for name in os.environ if env_refusal(name)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    with pytest.raises(SystemExit) as done:
        exec(compile(launcher_source(), "<launcher>", "exec"), {})  # noqa: S102 - the container's own source
    assert done.value.code == 0
    assert fake_vllm == [["vllm", "serve", *args]]
    module = sys.modules["gemma_serving_guard"]
    assert module.RouteGuard(Recorder()).config.names == frozenset({SERVED})


def test_the_admitted_paths_are_the_routes_the_project_serves() -> None:
    """What verify, the collectors and the probes call; a new entry is a decision, reviewed here."""
    assert admitted_paths() == (
        "/health",
        "/metrics",
        "/version",
        "/v1/models",
        "/v1/chat/completions",
        "/v1/completions",
        "/tokenize",
    )


def test_the_guards_source_imports_only_the_standard_library() -> None:
    """It runs inside the pinned vLLM image, where nothing of this project is installed."""
    import ast

    tree = ast.parse(guard_runtime.__loader__.get_source("serving.guard_runtime") or "")  # type: ignore[union-attr]
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported - {"vllm"} <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.parametrize(
    ("model", "status"),
    [
        (f"{ADAPTER}@v4", 200),
        (f"{ADAPTER}@2026.11.1", 200),
        (f"{ADAPTER}@../../x", 404),
        (f"{ADAPTER}@v4/../x", 404),
        (f"{ADAPTER}@", 404),
        ("undeclared@v1", 404),
        (f"{SERVED}@v1", 200),
    ],
)
async def test_a_version_of_a_declared_adapter_passes_and_a_path_never(model: str, status: int) -> None:
    """With adapters, `NAME@VERSION` is an immutable version the route table or a gate names; its label is never
    a path, and only a declared name's versions pass."""
    app = Recorder()
    configure(_config(versioned=True), KEY)
    assert (await _call(RouteGuard(app), "POST", "/v1/completions", body=_chat(model), key=KEY))[0] == status
