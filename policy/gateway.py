"""The promises of a fleet's inference gateway, for the objects the program (or a later refactor) registers.

- The Gateway is internal: its class is one of GKE's internal Application Load Balancers. The project
  offers no public gateway: vLLM's /metrics, /tokenize and /health answer without the API key, so an
  internet-facing gateway would need authentication in front (IAP or Apigee), which nothing here builds.
- The endpoint picker's RBAC is least privilege: a namespaced Role that reads pods and InferencePools, never
  a ClusterRole, never a write verb or a wildcard.
- An InferencePool names its picker and selects pods by non-empty labels (an empty selector takes every pod
  of the namespace, the picker's own among them), on at least one target port.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, mappings, strings

K8S_GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
K8S_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
K8S_CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
K8S_INFERENCE_POOL = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
# GKE's internal Application Load Balancer classes (regional; cross-regional multi-cluster).
INTERNAL_GATEWAY_CLASSES = frozenset({"gke-l7-rilb", "gke-l7-cross-regional-internal-managed-mc"})
PICKER_SUFFIX = "-epp"
READ_VERBS = frozenset({"get", "list", "watch"})
# (apiGroup, resource) the picker reads: its endpoints and its pool.
PICKER_READS = frozenset({("", "pods"), ("inference.networking.k8s.io", "inferencepools")})


def check_gateway_internal(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    gateway_class = field(props, "spec", "gatewayClassName")
    if gateway_class not in INTERNAL_GATEWAY_CLASSES:
        yield (
            f"spec.gatewayClassName {gateway_class!r} is not an internal load balancer; use one of "
            f"{sorted(INTERNAL_GATEWAY_CLASSES)} (a public gateway needs authentication in front, which the "
            "project does not build)"
        )


def _is_picker(props: Mapping[str, Any]) -> bool:
    name = field(props, "metadata", "name")
    return isinstance(name, str) and name.endswith(PICKER_SUFFIX)


def check_picker_rbac(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not _is_picker(props):
        return
    if resource_type == K8S_CLUSTER_ROLE:
        yield "the endpoint picker gets a cluster-wide role; give it a namespaced Role (pods, inferencepools)"
        return
    for index, rule in enumerate(mappings(field(props, "rules"))):
        verbs = set(strings(field(rule, "verbs")))
        groups = strings(field(rule, "apiGroups"))
        resources = strings(field(rule, "resources"))
        if not verbs <= READ_VERBS:
            yield f"rules[{index}].verbs {sorted(verbs)}: the picker only reads (get, list, watch)"
        wider = [(g, r) for g in groups for r in resources if (g, r) not in PICKER_READS]
        if wider or "*" in verbs:
            yield (
                f"rules[{index}] grants {wider or sorted(verbs)}: the picker reads pods and "
                "inference.networking.k8s.io/inferencepools only"
            )


def check_inference_pool(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not field(props, "spec", "endpointPickerRef", "name"):
        yield "spec.endpointPickerRef.name is missing: without a picker the pool is plain round robin"
    labels = field(props, "spec", "selector", "matchLabels")
    if not isinstance(labels, Mapping) or not labels:
        yield "spec.selector.matchLabels is empty: the pool would take every pod of the namespace"
    if not list(mappings(field(props, "spec", "targetPorts"))):
        yield "spec.targetPorts is empty: name the vLLM port"


GKE_GATEWAY_INTERNAL = Guardrail(
    name="gke-gateway-internal",
    description="An inference Gateway is an internal load balancer, never public.",
    resource_types=frozenset({K8S_GATEWAY}),
    check=check_gateway_internal,
)
GKE_PICKER_RBAC = Guardrail(
    name="gke-picker-rbac-least-privilege",
    description="The endpoint picker reads pods and InferencePools in its namespace, nothing more.",
    resource_types=frozenset({K8S_ROLE, K8S_CLUSTER_ROLE}),
    check=check_picker_rbac,
)
GKE_INFERENCE_POOL = Guardrail(
    name="gke-inference-pool-complete",
    description="An InferencePool names its endpoint picker, a non-empty pod selector and a target port.",
    resource_types=frozenset({K8S_INFERENCE_POOL}),
    check=check_inference_pool,
)
GATEWAY_GUARDRAILS = (GKE_GATEWAY_INTERNAL, GKE_PICKER_RBAC, GKE_INFERENCE_POOL)
