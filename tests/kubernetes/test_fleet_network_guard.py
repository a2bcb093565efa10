"""What the network says around a fleet's route guard: the gateway routes only the guard's paths, the pickers
have a NetworkPolicy of their own, and a fleet reached through its Service admits its named clients only.

Guards against issue 46's findings: the HTTPRoute sent every path (`/` prefix) to the pods, the pickers' pods
had no NetworkPolicy (any pod of the cluster could call the ext-proc port that decides where requests go), and
the fleet's NetworkPolicy admitted all of 10/8, 172.16/12 and 192.168/16.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.gke import manifests
from components.gke.gateway_manifests import EXT_PROC_PORT, GRPC_HEALTH_PORT, PICKER_METRICS_PORT
from policy.kubernetes import check_network_policy_narrow
from serving.route_guard import admitted_paths
from tests.conftest import render_stack, stack_config
from tests.kubernetes.manifests import kubernetes_manifests, validate

GATEWAY_STACKS = ["gke-l4x4", "gke-tpu-v6e", "gke-h100", "gke-l4-adapters"]
GMP = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "collector"}},
}


def _objects(stack: str, overrides: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return kubernetes_manifests(render_stack(stack, overrides) if overrides else render_stack(stack))


def _named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize("stack", GATEWAY_STACKS)
def test_the_gateway_routes_exactly_the_paths_the_guard_admits(stack: str) -> None:
    """The load balancer answers 404 to /invocations, /generative_scoring and the rest before a pod sees them."""
    (route,) = [o for o in _objects(stack) if o["kind"] == "HTTPRoute"]
    (rule,) = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "Exact", "value": path}} for path in admitted_paths()]


@pytest.mark.parametrize("stack", GATEWAY_STACKS)
def test_each_picker_admits_the_load_balancer_and_the_collectors_only(stack: str) -> None:
    """The picker's ext-proc and health ports from the proxy-only subnet and Google's health checkers, its
    metrics port from Managed Prometheus: nothing else of the cluster or the VPC."""
    objects = _objects(stack)
    picker = f"gemma-{stack}-vllm-epp"
    policy = _named(objects, "NetworkPolicy", f"{picker}-ingress")
    deployment = _named(objects, "Deployment", picker)
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    balancer, collectors = policy["spec"]["ingress"]
    assert [peer["ipBlock"]["cidr"] for peer in balancer["from"]] == [
        "192.168.254.0/23",
        *manifests.HEALTH_CHECK_RANGES,
    ]
    assert [p["port"] for p in balancer["ports"]] == [EXT_PROC_PORT, GRPC_HEALTH_PORT]
    assert collectors == {"from": [GMP], "ports": [{"protocol": "TCP", "port": PICKER_METRICS_PORT}]}
    assert list(check_network_policy_narrow("", policy, {})) == []
    version = json.loads(stack_config(stack).values["gemma-serving:gke"]).get("cluster", {}).get("kubernetesVersion")
    validate(policy, version or "1.34")  # kubernetes-validate, strict: raises on a field the schema lacks


def test_a_gated_fleet_has_a_picker_policy_per_track() -> None:
    """Both tracks' pickers decide where requests go: both are closed the same way."""
    gke = json.loads(stack_config("gke-l4x4").values["gemma-serving:gke"])
    gke["rollout"] = {"gated": True}
    objects = _objects("gke-l4x4", {"gemma-serving:gke": json.dumps(gke)})
    names = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "NetworkPolicy")
    assert names == [
        "gemma-gke-l4x4-vllm-blue-epp-ingress",
        "gemma-gke-l4x4-vllm-green-epp-ingress",
        "gemma-gke-l4x4-vllm-ingress",
    ]


def test_a_fleet_reached_through_its_service_admits_its_clients_not_every_private_range() -> None:
    """One replica, no gateway: the pods admit the default network's subnets (or the named clients), the
    collectors and the health checkers; never 10/8, 172.16/12 or 192.168/16 whole."""
    objects = _objects("gke-l4x2-31b-nvfp4")
    policy = _named(objects, "NetworkPolicy", "gemma-gke-l4x2-31b-nvfp4-vllm-ingress")
    (rule,) = policy["spec"]["ingress"]
    assert GMP in rule["from"]
    cidrs = [peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer]
    assert cidrs == ["10.128.0.0/9", *manifests.HEALTH_CHECK_RANGES]
    gke = json.loads(stack_config("gke-l4x2-31b-nvfp4").values["gemma-serving:gke"])
    gke["service"] = {"clientRanges": ["10.20.0.0/16", "10.21.0.0/16"]}
    objects = _objects("gke-l4x2-31b-nvfp4", {"gemma-serving:gke": json.dumps(gke)})
    policy = _named(objects, "NetworkPolicy", "gemma-gke-l4x2-31b-nvfp4-vllm-ingress")
    cidrs = [peer["ipBlock"]["cidr"] for peer in policy["spec"]["ingress"][0]["from"] if "ipBlock" in peer]
    assert cidrs == ["10.20.0.0/16", "10.21.0.0/16", *manifests.HEALTH_CHECK_RANGES]
    deployment = _named(objects, "Deployment", "gemma-gke-l4x2-31b-nvfp4-vllm")
    config = json.loads(deployment["spec"]["template"]["spec"]["containers"][0]["command"][-2])
    assert config["clients"] == ["10.20.0.0/16", "10.21.0.0/16"]
