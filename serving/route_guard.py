"""How every serving container starts vLLM behind the route guard (serving/guard_runtime.py), on every platform.

The container runs `python3 -c <launcher> <guard config> serve <vllm args>`: the launcher registers the guard's
source (embedded, so the pinned upstream image is served unchanged) as the module `gemma_serving_guard`, and
the guard's `launch` checks the environment and the arguments before it runs vLLM's own CLI in the same
process, where `--middleware gemma_serving_guard.RouteGuard` (always among the serve arguments) installs it.
Everything the guard admits is in the launch line, so the plan shows it and a change to it is a new revision.

`VLLM_PLUGINS` is left unset on purpose: it filters platform plugins too, and setting it would drop vllm-tpu's
TPU platform.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from serving.guard_runtime import (
    KEY,
    MIDDLEWARE,
    MODULE,
    OPEN,
    REFUSED_ENV,
    REFUSED_ENV_PREFIXES,
    ROUTES,
    SCRAPE,
    env_refusal,
)

__all__ = [
    "GUARD_MIDDLEWARE",
    "GUARD_MODULE",
    "REFUSED_ENV",
    "REFUSED_ENV_PREFIXES",
    "GuardConfig",
    "admitted_paths",
    "env_problem",
    "guard_args",
    "launcher_command",
    "launcher_source",
]

GUARD_MODULE = MODULE
GUARD_MIDDLEWARE = MIDDLEWARE
RUNTIME_FILE = Path(__file__).with_name("guard_runtime.py")
# The interpreter the launcher runs under: on PATH in the vllm-openai and vllm-tpu images alike.
PYTHON = "python3"

# How each access class reads in the docs and the plan.
ACCESS_TEXT = {OPEN: "anyone who reaches the port", KEY: "the API key", SCRAPE: "the API key, or the collectors"}


@dataclass(frozen=True)
class GuardConfig:
    """What one server admits (serving/guard_runtime.py's GuardConfig reads the same JSON)."""

    # The `model` names the server answers: the served name, then the declared adapters (stacks/route_guard.py).
    names: tuple[str, ...]
    # `none` on Cloud Run (IAM at Google's front end; vLLM holds no key), `required` elsewhere.
    key: Literal["required", "none"]
    # Who reads /metrics without the key: a collector on the same host, or the peers the network admits.
    scrapers: Literal["loopback", "network"] = "loopback"
    # Client-facing ranges (a GKE fleet's proxy-only subnet and client ranges): keyless /metrics refused there.
    clients: tuple[str, ...] = ()
    # The resolver folder the program points vLLM's LoRA resolver at, when the stack declares adapters.
    adapters_dir: str | None = None
    # With adapters: `NAME@VERSION` of a declared name passes too (the route table's immutable versions).
    versioned: bool = False

    def __post_init__(self) -> None:
        if not self.names or len(set(self.names)) != len(self.names):
            raise ValueError(f"GuardConfig.names {list(self.names)}: need one or more names, none twice")

    def to_json(self) -> str:
        data = {
            "names": list(self.names),
            "key": self.key,
            "scrapers": self.scrapers,
            "clients": list(self.clients),
            "adapters_dir": self.adapters_dir,
            "versioned": self.versioned,
        }
        return json.dumps(data, separators=(",", ":"))


@functools.cache
def launcher_source(modules: tuple[tuple[str, str], ...] = ()) -> str:
    """`python3 -c` source: each (module name, source) registered (middleware vLLM installs inside the guard,
    e.g. the adapter route table), then the guard's text, then its `launch` on the arguments."""
    runtime = RUNTIME_FILE.read_text(encoding="utf-8")
    lines = ["import sys, types"]
    for name, source in (*modules, (GUARD_MODULE, runtime)):
        lines += [
            f"module = types.ModuleType({name!r})",
            f"sys.modules[{name!r}] = module",
            f"exec(compile({source!r}, {name!r}, 'exec'), module.__dict__)",
        ]
    lines += ["guard = module", "sys.exit(guard.launch(sys.argv[1:]))", ""]
    return "\n".join(lines)


def launcher_command(config: GuardConfig, modules: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """The container command before vLLM's arguments: `python3 -c <launcher> <config> serve`."""
    return [PYTHON, "-c", launcher_source(modules), config.to_json(), "serve"]


def guard_args(*inner: str) -> list[str]:
    """vLLM's `--middleware` flags: `inner` ones first, the guard last, so that it is the outermost layer (vLLM
    adds each as the new outermost; the launcher refuses to start vLLM otherwise)."""
    return [part for middleware in (*inner, GUARD_MIDDLEWARE) for part in ("--middleware", middleware)]


# What the program sets itself in a serving container (the adapter route table's location and names).
RESERVED_ENV_PREFIX = "GEMMA_"


def env_problem(name: str, key: str) -> str | None:
    """A stack's env naming a variable that changes vLLM's routes, auth or adapter loading, with the key."""
    if name.startswith(RESERVED_ENV_PREFIX):
        return f"{key}: {name!r}: names starting {RESERVED_ENV_PREFIX} are the program's own (the adapter route table)"
    why = env_refusal(name)
    if why is None:
        return None
    return (
        f"{key}: {name!r} is not allowed in a serving container: it {why}. The route guard refuses to start "
        "vLLM with it (docs/security.md)"
    )


def admitted_paths() -> tuple[str, ...]:
    """Every path the guard admits, in its table's order (what a gateway's route matches too)."""
    return tuple(dict.fromkeys(path for _method, path in ROUTES))


def admitted_routes() -> Sequence[tuple[str, str, str, bool]]:
    """(method, path, who may call it, whether `model` is checked), for the docs and tests."""
    return [(method, path, ACCESS_TEXT[access], model) for (method, path), (access, model) in ROUTES.items()]
