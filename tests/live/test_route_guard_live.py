"""The route guard against a real vLLM 0.32 (CPU) server started with each platform's launch line.

Reproduces issue 46's findings on the real thing: with a key set, `POST /invocations` returned a full completion
without it, and `/tokenize`, `/detokenize`, `/generative_scoring`, `/scale_elastic_ep`, `/load` and `/metrics`
answered too; dev mode mounted admin routes outside the key. Behind the guard each is refused, keyed or not,
and `/v1/chat/completions` with the key is served. One server per platform (tests/live/launch_lines.py builds
its line from a shipped stack), one more with dev mode forced on behind the guard, and one launch that must
refuse to start. Skipped unless `make test-live` (VERIFY_LIVE_START=1).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from serving.guard_runtime import REFUSED_EXIT
from tests.live.launch_lines import (
    PLATFORM_STACKS,
    LaunchLine,
    Served,
    platform_launch_line,
    start_line,
    stop_group,
    wait_healthy,
)
from tests.live.server import Home, free_port

pytestmark = pytest.mark.live

KEY = "live-guard-key"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
# Routes a vLLM 0.32 server answers outside the API key (issue 46), each with a body it would accept.
UNGUARDED: list[tuple[str, str, object]] = [
    ("POST", "/invocations", {**CHAT}),
    ("POST", "/generative_scoring", {"query": "a", "items": ["b"]}),
    ("POST", "/scale_elastic_ep", {"new_data_parallel_size": 2}),
    ("POST", "/detokenize", {"tokens": [1, 2]}),
    ("GET", "/load", None),
    ("GET", "/ping", None),
    ("GET", "/docs", None),
    ("GET", "/openapi.json", None),
]
# What VLLM_SERVER_DEV_MODE mounts (vllm/entrypoints/serve/dev/*), none behind the key.
DEV_MODE: list[tuple[str, str, object]] = [
    ("GET", "/server_info", None),
    ("POST", "/reset_prefix_cache", None),
    ("POST", "/pause", None),
    ("POST", "/sleep", None),
    ("POST", "/collective_rpc", {"method": "get_model"}),
    ("POST", "/update_weights", {}),
]
PATH_LIKE = ["../tiny-model", "/etc", "/tmp", "adapters/../../x"]


def _live() -> None:
    if os.environ.get("VERIFY_LIVE_START") != "1":
        pytest.skip("no live vLLM: run `make test-live` (VERIFY_LIVE_START=1)")


@pytest.fixture(scope="module", params=sorted(PLATFORM_STACKS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _live()
    platform = str(request.param)
    home, work, port = Home.from_env(), tmp_path_factory.mktemp(platform), free_port()
    line = platform_launch_line(platform, home, work, port, KEY)
    log_path = work / "server.log"
    with log_path.open("wb") as log:
        process = start_line(line, home, work, log)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, process, log_path)
        yield Served(base_url, process, line)
    finally:
        stop_group(process)


def _send(served: Served, method: str, path: str, body: object, *, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=served.base_url, timeout=120) as client:
        return client.request(method, path, json=body, headers=headers)


def _keys(line: LaunchLine) -> list[str | None]:
    """Without a key, with the server's key, with a wrong one (Cloud Run holds none: IAM is in front)."""
    return [None, "wrong-key", *([line.key] if line.key else [])]


@pytest.mark.parametrize(("method", "path", "body"), UNGUARDED + DEV_MODE)
def test_routes_outside_the_allowlist_are_refused_keyed_or_not(
    served: Served, method: str, path: str, body: object
) -> None:
    """/invocations answered a completion without the key; every unlisted route must be refused by anyone."""
    for key in _keys(served.line):
        answer = _send(served, method, path, body, key=key)
        assert answer.status_code == 403, (path, key, answer.text)


@pytest.mark.parametrize("model", PATH_LIKE)
def test_a_path_like_model_is_refused_keyed_or_not(served: Served, model: str) -> None:
    """vLLM's filesystem resolver joins `model` to its folder: a path never reaches it."""
    for key in _keys(served.line):
        answer = _send(served, "POST", "/v1/chat/completions", {**CHAT, "model": model}, key=key)
        assert answer.status_code in {401, 404}, (model, key, answer.text)
        assert answer.status_code == 404 or served.line.key is not None


def test_chat_with_the_key_is_served_and_without_it_refused(served: Served) -> None:
    """The one thing the server is for still works, on each platform's line; the key is still required."""
    body = {**CHAT, "model": served.line.served_name}
    answer = _send(served, "POST", "/v1/chat/completions", body, key=served.line.key)
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"] == served.line.served_name
    if served.line.key:
        assert _send(served, "POST", "/v1/chat/completions", body, key=None).status_code == 401


def test_tokenize_and_metrics_are_served_to_verify_and_the_collector_only(served: Served) -> None:
    """verify needs /tokenize (exact-length prompts) and /metrics: with the key; the collector beside vLLM
    reads /metrics over loopback without it; /tokenize without the key is refused."""
    body = {"model": served.line.served_name, "prompt": "hello"}
    assert _send(served, "POST", "/tokenize", body, key=served.line.key).status_code == 200
    assert _send(served, "GET", "/metrics", None, key=served.line.key).status_code == 200
    assert _send(served, "GET", "/metrics", None, key=None).status_code == 200  # loopback: the collector
    if served.line.key:
        assert _send(served, "POST", "/tokenize", body, key=None).status_code == 401
        assert _send(served, "GET", "/version", None, key=None).status_code == 401


def test_dev_mode_routes_stay_closed_even_when_vllm_mounts_them(tmp_path: Path) -> None:
    """Forced on behind the guard (the launcher itself refuses dev mode, next test), vLLM mounts /server_info,
    /sleep, /collective_rpc ...: the guard's allowlist refuses them all, keyed or not."""
    _live()
    home, port = Home.from_env(), free_port()
    line = platform_launch_line("tpu", home, tmp_path, port, KEY)
    # The launcher's own env check would stop this server; the guard module is run as the launcher would run it.
    source_index = line.argv.index("-c") + 1
    forced = line.argv[source_index].replace(
        "sys.exit(guard.launch(sys.argv[1:]))",
        "guard.GuardConfig.env_problems = lambda self, env: []\nsys.exit(guard.launch(sys.argv[1:]))",
    )
    argv = [*line.argv[:source_index], forced, *line.argv[source_index + 1 :]]
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        process = start_line(
            LaunchLine(argv, line.env, KEY, line.served_name), home, tmp_path, log, {"VLLM_SERVER_DEV_MODE": "1"}
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, log_path)
        assert "Development endpoints are enabled" in log_path.read_text()
        served = Served(f"http://127.0.0.1:{port}", process, line)
        for method, path, body in DEV_MODE:
            for key in (None, KEY):
                assert _send(served, method, path, body, key=key).status_code == 403, path
    finally:
        stop_group(process)


@pytest.mark.parametrize("variable", ["VLLM_SERVER_DEV_MODE", "VLLM_ALLOW_RUNTIME_LORA_UPDATING"])
def test_the_launch_line_refuses_to_start_vllm_with_a_route_changing_variable(tmp_path: Path, variable: str) -> None:
    """Set by any means (the settings refuse it first), the GKE pod's line exits 78 before vLLM starts."""
    _live()
    home, port = Home.from_env(), free_port()
    line = platform_launch_line("gke", home, tmp_path, port, KEY)
    with (tmp_path / "server.log").open("wb") as log:
        process = start_line(line, home, tmp_path, log, {variable: "1"})
    try:
        assert process.wait(timeout=120) == REFUSED_EXIT
    except subprocess.TimeoutExpired:  # pragma: no cover - a failure: it started
        stop_group(process)
        raise
    assert variable in (tmp_path / "server.log").read_text()
