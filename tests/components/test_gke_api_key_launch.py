"""A GKE pod whose API-key file was empty started vLLM with no authentication: `VLLM_API_KEY="$(cat file)"`
hands vLLM an empty key, which vLLM reads as "no key", so every route answered anyone on the network.

The pod's real launch line (components/gke/manifests.py) runs here under /bin/sh with a stand-in `vllm` on
PATH that records what it was started with: a missing, empty or blank key file must stop the pod before
vLLM starts; a key must reach vLLM as VLLM_API_KEY (never argv) with the serve arguments intact.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.gke.manifests import API_KEY_FILE, NO_KEY_EXIT, deployment, launch_line
from serving.lora import launcher_command
from tests.policy.kubernetes_cases import fleet

# Stands in for the image's `vllm`: prints its key and argv, one per line.
FAKE_VLLM = '#!/bin/sh\nprintf "key=%s\\n" "$VLLM_API_KEY"\nfor arg in "$@"; do printf "arg=%s\\n" "$arg"; done\n'
SERVE_ARGS = ["/mnt/models/m", "--port", "8000", "--override-generation-config", '{"temperature": 0.2}']


def _launch(tmp_path: Path, key: str | None, *, launcher: bool = False) -> subprocess.CompletedProcess[str]:
    """The pod's line; with `launcher`, the LoRA stacks' form that execs the command it was handed (a stand-in
    `python3` records it), as components/gke/manifests.py builds it."""
    secrets, bin_dir = tmp_path / "secrets", tmp_path / "bin"
    secrets.mkdir()
    bin_dir.mkdir()
    for program in ("vllm", "python3"):
        fake = bin_dir / program
        fake.write_text(FAKE_VLLM, encoding="utf-8")
        fake.chmod(0o755)
    if key is not None:
        (secrets / API_KEY_FILE).write_text(key, encoding="utf-8")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    line = launch_line(str(secrets), own_command=launcher)
    command = launcher_command() if launcher else []
    return subprocess.run(
        ["/bin/sh", "-c", line, "vllm", *command, *SERVE_ARGS],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=10,
    )


@pytest.mark.parametrize(
    ("case", "key"), [("missing file", None), ("empty file", ""), ("blank file", " \n\t\n"), ("newline only", "\n")]
)
@pytest.mark.parametrize("launcher", [False, True], ids=["vllm serve", "LoRA launcher"])
def test_no_key_stops_the_pod_before_vllm_starts(tmp_path: Path, case: str, key: str | None, launcher: bool) -> None:
    """The attack: empty the secret version (or lose the mount); the server must not come up open."""
    result = _launch(tmp_path, key, launcher=launcher)
    assert result.returncode == NO_KEY_EXIT, (case, result)
    assert "key=" not in result.stdout  # vllm never ran
    assert "missing or blank: refusing to serve without auth" in result.stderr


def test_a_key_reaches_vllm_as_env_with_the_arguments_intact(tmp_path: Path) -> None:
    """The safe path still serves: the key (trailing newline trimmed) in the env, JSON arguments unsplit."""
    result = _launch(tmp_path, "s3cret-key\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "key=s3cret-key"
    assert lines[1:] == [f"arg={arg}" for arg in ["serve", *SERVE_ARGS]]


def test_the_lora_launcher_gets_the_key_and_its_source_intact(tmp_path: Path) -> None:
    """With adapters the pod execs `python3 -c <launcher> serve ...`: the multi-line source must arrive as one
    argument and the key as VLLM_API_KEY, exactly as for `vllm serve`."""
    result = _launch(tmp_path, "s3cret-key\n", launcher=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("key=s3cret-key\n")
    assert result.stdout.removeprefix("key=s3cret-key\n") == "".join(
        f"arg={arg}\n" for arg in [*launcher_command()[1:], *SERVE_ARGS]
    )


def test_the_deployment_runs_the_fail_closed_line() -> None:
    """The Deployment must run this line (not an older `$(cat ...)` form), with the key file's mount."""
    container = deployment(fleet())["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/sh", "-c", launch_line(), "vllm"]
    assert "s3cret" not in str(container)
