"""A vLLM server runs behind the route guard, on every platform: the pack refuses one that does not.

Why a pack rule beside the settings: vLLM 0.32's API key guards only its `/v1`, `/v2`, `/inference` and
`/cohere` prefixes, so a container started as the image's plain `vllm serve` answers `/invocations` (a full
completion), `/tokenize`, `/generative_scoring` and whatever vLLM adds next to anyone who reaches the port, and
loads any folder a request's `model` names through the LoRA resolver. The guard (serving/guard_runtime.py)
runs only when the container starts vLLM through its launcher (`python3 -c <launcher> <config> serve`) with
`--middleware gemma_serving_guard.RouteGuard` as the last (outermost) of vLLM's middleware; a hand-written
container, a later refactor or another program's manifest without both is refused here.

What it reads: a Cloud Run service's containers, a Kubernetes workload's containers and a TPU queued
resource's startup script, each container that looks like vLLM (policy/vllm_args.py). Standard library only:
the names below are the launcher's own (serving/route_guard.py; a test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.kubernetes import POD_SPEC_PATHS
from policy.props import field, mappings, strings
from policy.tpu import DYNAMIC_PREFIX, GCP_QUEUED_RESOURCE, node_specs, queued_resource_body
from policy.vllm_args import flag_values, looks_like_vllm, tokens

GUARD_MIDDLEWARE = "gemma_serving_guard.RouteGuard"
# The launcher's last line, present verbatim in its source (and so in a shell-quoted startup script).
LAUNCHER_MARKER = "sys.exit(guard.launch(sys.argv[1:]))"
CLOUD_RUN_SERVICE = "gcp:cloudrunv2/service:Service"
STARTUP_SCRIPT = "startup-script"
FIX = (
    "start vLLM through the route guard's launcher (`python3 -c <launcher> <config> serve`, "
    f"serving/route_guard.py) with `--middleware {GUARD_MIDDLEWARE}` last; plain `vllm serve` answers /invocations, "
    "/tokenize and every route outside /v1 without the API key"
)


def _container_problem(where: str, container: Mapping[str, Any], command_key: str) -> str | None:
    """Why a container that runs vLLM is not behind the guard, or None (also for one that is not vLLM)."""
    parts = [*strings(field(container, command_key)), *strings(field(container, "args"))]
    image = field(container, "image")
    argv = tokens(parts)
    if not looks_like_vllm(image if isinstance(image, str) else None, argv):
        return None
    launched = any(LAUNCHER_MARKER in part for part in parts)
    # vLLM adds each `--middleware` as the new outermost layer: the guard must be the last one.
    installed = flag_values(argv, "--middleware")[-1:] == [GUARD_MIDDLEWARE]
    if launched and installed:
        return None
    missing = " and ".join(
        what for what, ok in (("the launcher", launched), (f"--middleware {GUARD_MIDDLEWARE}", installed)) if not ok
    )
    return f"{where} runs vLLM without {missing}: {FIX}"


def check_vllm_behind_the_guard(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type == CLOUD_RUN_SERVICE:
        for index, container in enumerate(mappings(field(props, "template", "containers"))):
            problem = _container_problem(f"template.containers[{index}]", container, "commands")
            if problem:
                yield problem
        return
    if resource_type in POD_SPEC_PATHS:
        path = POD_SPEC_PATHS[resource_type]
        for group in ("initContainers", "containers"):
            for index, container in enumerate(mappings(field(props, *path, group))):
                problem = _container_problem(f"{'.'.join(path)}.{group}[{index}]", container, "command")
                if problem:
                    yield problem
        return
    body = queued_resource_body(resource_type, props)
    if body is None:
        return
    for index, node in enumerate(node_specs(body)):
        script = field(node, "node", "metadata", STARTUP_SCRIPT)
        if not isinstance(script, str) or "vllm" not in script:
            continue
        if LAUNCHER_MARKER not in script or f"--middleware {GUARD_MIDDLEWARE}" not in script:
            yield f"tpu.nodeSpec[{index}] startup script starts vLLM without the route guard: {FIX}"


VLLM_BEHIND_ROUTE_GUARD = Guardrail(
    name="vllm-behind-route-guard",
    description=(
        "Every vLLM server (Cloud Run, GKE, TPU VM) starts behind the route guard: only the routes the project "
        "serves, the key outside /v1, and only the served model's or declared adapters' names"
    ),
    resource_types=frozenset({CLOUD_RUN_SERVICE, GCP_QUEUED_RESOURCE, *POD_SPEC_PATHS}),
    check=check_vllm_behind_the_guard,
    type_prefixes=(DYNAMIC_PREFIX,),
)
