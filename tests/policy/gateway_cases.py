"""Crafted inference-gateway objects for the gateway guardrails (policy/gateway.py): the program's own
manifests (components/gke/gateway_manifests.py) pass, and each way to break a promise is refused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from components.gke import gateway_manifests as manifests
from components.gke.gateway_manifests import GatewaySpec, PoolSpec
from policy.gateway import (
    GKE_GATEWAY_INTERNAL,
    GKE_INFERENCE_POOL,
    GKE_PICKER_RBAC,
    K8S_CLUSTER_ROLE,
    K8S_GATEWAY,
    K8S_INFERENCE_POOL,
    K8S_ROLE,
)
from tests.policy.kubernetes_cases import K8sCase

SPEC = GatewaySpec(
    name="gemma-x-vllm",
    namespace="gemma",
    port=8000,
    pools=[PoolSpec("gemma-x-vllm", {"app": "x"})],
    proxy_range="192.168.254.0/23",
)
POOL = SPEC.pools[0]


def _changed(
    build: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], None]
) -> Callable[[], dict[str, Any]]:
    def made() -> dict[str, Any]:
        manifest = copy.deepcopy(build())
        change(manifest)
        return manifest

    return made


def _external(manifest: dict[str, Any]) -> None:
    manifest["spec"]["gatewayClassName"] = "gke-l7-regional-external-managed"


def _writes_pods(manifest: dict[str, Any]) -> None:
    manifest["rules"][0]["verbs"] = ["get", "list", "watch", "delete"]


def _reads_secrets(manifest: dict[str, Any]) -> None:
    manifest["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})


def _cluster_role() -> dict[str, Any]:
    return {**manifests.picker_role(SPEC, POOL), "kind": "ClusterRole"}


def _no_selector(manifest: dict[str, Any]) -> None:
    manifest["spec"]["selector"]["matchLabels"] = {}


def _no_picker(manifest: dict[str, Any]) -> None:
    del manifest["spec"]["endpointPickerRef"]


def _gateway() -> dict[str, Any]:
    return manifests.gateway(SPEC)


def _role() -> dict[str, Any]:
    return manifests.picker_role(SPEC, POOL)


def _pool() -> dict[str, Any]:
    return manifests.inference_pool(SPEC, POOL)


GATEWAY_GOOD: list[K8sCase] = [
    ("internal-gateway", GKE_GATEWAY_INTERNAL, K8S_GATEWAY, _gateway, None),
    ("picker-reads-its-pool", GKE_PICKER_RBAC, K8S_ROLE, _role, None),
    ("complete-pool", GKE_INFERENCE_POOL, K8S_INFERENCE_POOL, _pool, None),
]
GATEWAY_BAD: list[K8sCase] = [
    ("external-gateway", GKE_GATEWAY_INTERNAL, K8S_GATEWAY, _changed(_gateway, _external), "not an internal"),
    ("picker-deletes-pods", GKE_PICKER_RBAC, K8S_ROLE, _changed(_role, _writes_pods), "only reads"),
    ("picker-reads-secrets", GKE_PICKER_RBAC, K8S_ROLE, _changed(_role, _reads_secrets), "secrets"),
    ("picker-cluster-role", GKE_PICKER_RBAC, K8S_CLUSTER_ROLE, _cluster_role, "cluster-wide"),
    ("pool-takes-every-pod", GKE_INFERENCE_POOL, K8S_INFERENCE_POOL, _changed(_pool, _no_selector), "matchLabels"),
    ("pool-without-picker", GKE_INFERENCE_POOL, K8S_INFERENCE_POOL, _changed(_pool, _no_picker), "round robin"),
]
