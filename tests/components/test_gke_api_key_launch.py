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
from serving.route_guard import GuardConfig, launcher_command
from tests.policy.kubernetes_cases import fleet

LAUNCHER = launcher_command(GuardConfig(names=("m",), key="required", scrapers="network"))
# Stands in for the image's `python3` (the route guard's launcher): prints its key and argv, one per line.
FAKE_VLLM = '#!/bin/sh\nprintf "key=%s\\n" "$VLLM_API_KEY"\nfor arg in "$@"; do printf "arg=%s\\n" "$arg"; done\n'
SERVE_ARGS = ["/mnt/models/m", "--port", "8000", "--override-generation-config", '{"temperature": 0.2}']


def _launch(tmp_path: Path, key: str | None) -> subprocess.CompletedProcess[str]:
    """The pod's line, which execs the command it was handed (the route guard's launcher; a stand-in `python3`
    records it), as components/gke/manifests.py builds it."""
    secrets, bin_dir = tmp_path / "secrets", tmp_path / "bin"
    secrets.mkdir()
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE_VLLM, encoding="utf-8")
    fake.chmod(0o755)
    if key is not None:
        (secrets / API_KEY_FILE).write_text(key, encoding="utf-8")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}
    return subprocess.run(
        ["/bin/sh", "-c", launch_line(str(secrets)), "vllm", *LAUNCHER, *SERVE_ARGS],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=10,
    )


@pytest.mark.parametrize(
    ("case", "key"), [("missing file", None), ("empty file", ""), ("blank file", " \n\t\n"), ("newline only", "\n")]
)
def test_no_key_stops_the_pod_before_vllm_starts(tmp_path: Path, case: str, key: str | None) -> None:
    """The attack: empty the secret version (or lose the mount); the server must not come up open."""
    result = _launch(tmp_path, key)
    assert result.returncode == NO_KEY_EXIT, (case, result)
    assert "key=" not in result.stdout  # vllm never ran
    assert "missing or blank: refusing to serve without auth" in result.stderr


def test_the_launcher_gets_the_key_and_its_source_intact(tmp_path: Path) -> None:
    """The pod execs `python3 -c <launcher> <config> serve ...`: the multi-line source and the JSON config must
    arrive as one argument each, the key as VLLM_API_KEY (never argv), the serve arguments unsplit."""
    result = _launch(tmp_path, "s3cret-key\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("key=s3cret-key\n")
    assert result.stdout.removeprefix("key=s3cret-key\n") == "".join(
        f"arg={arg}\n" for arg in [*LAUNCHER[1:], *SERVE_ARGS]
    )


def test_the_deployment_runs_the_fail_closed_line() -> None:
    """The Deployment must run this line (not an older `$(cat ...)` form), with the key file's mount."""
    container = deployment(fleet())["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/sh", "-c", launch_line(), "vllm", *fleet().serving_command]
    assert "s3cret" not in str(container)
