"""Crafted serving containers for the route-guard rule (policy/route_guard.py): the program's own launch lines on
Cloud Run, GKE and the TPU VM pass; plain `vllm serve`, or the launcher without the middleware, is refused.
tests/policy/test_rules.py runs them with every other guardrail's cases."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from components.gke import manifests
from components.tpu.startup_script import StartupScriptSpec, render_startup_script
from policy.route_guard import CLOUD_RUN_SERVICE, VLLM_BEHIND_ROUTE_GUARD
from serving.route_guard import GuardConfig, guard_args, launcher_command
from tests.policy.kubernetes_cases import K8sCase, fleet
from tests.policy.props import SERVE_ARGS, TPU_DYNAMIC, gpu_service, tpu_request

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LAUNCHER = launcher_command(GuardConfig(names=("gemma-4-12b-it",), key="none"))
# The serve arguments without `--middleware gemma_serving_guard.RouteGuard`.
PLAIN_ARGS = [arg for arg in SERVE_ARGS if arg not in guard_args()]


def _service(
    commands: list[str], args: list[str], image: str = "vllm/vllm-openai:v0.32.0"
) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        props = gpu_service()
        container = props["template"]["containers"][0]
        container.update(image=image, args=list(args))
        if commands:
            container["commands"] = list(commands)
        else:
            container.pop("commands", None)
        return props

    return build


def _deployment(command: list[str] | None = None) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        manifest = copy.deepcopy(manifests.deployment(fleet()))
        if command is not None:
            manifest["spec"]["template"]["spec"]["containers"][0]["command"] = command
        return manifest

    return build


def _tpu_node() -> dict[str, Any]:
    spec = StartupScriptSpec(
        project="p",
        image="vllm/vllm-tpu:v0.32.0",
        serve_args=["/mnt/models/m", "--port", "8000", *guard_args()],
        model_dirs=["m"],
        api_key_secret="k",
        port=8000,
        serving_command=launcher_command(GuardConfig(names=("m",), key="required")),
    )
    props = tpu_request(spot={})
    props["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"] = render_startup_script(spec)
    return props


def _plain_tpu_node() -> dict[str, Any]:
    props = tpu_request(spot={})
    props["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"] = (
        "#!/bin/bash\ndocker run --entrypoint vllm vllm/vllm-tpu:v0.32.0 serve /mnt/models/m --port 8000\n"
    )
    return props


GUARD_GOOD: list[K8sCase] = [
    (
        "cloud-run-guarded",
        VLLM_BEHIND_ROUTE_GUARD,
        CLOUD_RUN_SERVICE,
        _service(LAUNCHER, list(SERVE_ARGS)),
        None,
    ),
    ("gke-guarded", VLLM_BEHIND_ROUTE_GUARD, DEPLOYMENT, _deployment(), None),
    ("tpu-guarded", VLLM_BEHIND_ROUTE_GUARD, TPU_DYNAMIC, _tpu_node, None),
    ("not-vllm", VLLM_BEHIND_ROUTE_GUARD, CLOUD_RUN_SERVICE, _service([], ["--port", "8080"], "gcr.io/p/app:1"), None),
]
GUARD_BAD: list[K8sCase] = [
    (
        "cloud-run-plain-vllm-serve",
        VLLM_BEHIND_ROUTE_GUARD,
        CLOUD_RUN_SERVICE,
        _service([], PLAIN_ARGS),
        "runs vLLM without the launcher and --middleware gemma_serving_guard.RouteGuard",
    ),
    (
        "cloud-run-launcher-without-middleware",
        VLLM_BEHIND_ROUTE_GUARD,
        CLOUD_RUN_SERVICE,
        _service(LAUNCHER, PLAIN_ARGS),
        "without --middleware gemma_serving_guard.RouteGuard",
    ),
    (
        "cloud-run-middleware-without-launcher",
        VLLM_BEHIND_ROUTE_GUARD,
        CLOUD_RUN_SERVICE,
        _service(["vllm", "serve"], list(SERVE_ARGS)),
        "runs vLLM without the launcher:",
    ),
    (
        "gke-plain-vllm-serve",
        VLLM_BEHIND_ROUTE_GUARD,
        DEPLOYMENT,
        _deployment(["/bin/sh", "-c", manifests.LAUNCH, "vllm", "vllm", "serve"]),
        "spec.template.spec.containers[0] runs vLLM without the launcher",
    ),
    (
        "tpu-plain-docker-run",
        VLLM_BEHIND_ROUTE_GUARD,
        TPU_DYNAMIC,
        _plain_tpu_node,
        "startup script starts vLLM without the route guard",
    ),
]
