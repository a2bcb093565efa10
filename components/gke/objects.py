"""Register one Kubernetes manifest (a plain dict) as the pulumi-kubernetes resource of its kind.

Why one helper: the fleet, the metrics adapter and the inference gateway all build their objects as plain
manifests (validated by the tests against the pinned schemas, checked by the policy pack), and each must
reach the engine as the typed resource of its kind, so the plan and the state name `kubernetes:apps/v1:
Deployment`, not a generic custom resource. Kinds without a typed class (CRDs' kinds) go through
`CustomResource`, whose type token pulumi-kubernetes derives from the apiVersion and kind alike.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

# (apiVersion, kind) -> the typed class, for every built-in kind the project registers.
_TYPED: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("apiregistration.k8s.io/v1", "APIService"): k8s.apiregistration.v1.APIService,
}


def _snake(name: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in name)


def register(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The manifest as a resource named `name` (a Pulumi name, not the object's metadata.name)."""
    key = (manifest["apiVersion"], manifest["kind"])
    # Top-level fields are keyword arguments (snake_case: roleRef -> role_ref); nested values keep the
    # manifest's own spelling, which is also the wire form.
    body = {_snake(field): value for field, value in manifest.items() if field not in {"apiVersion", "kind"}}
    typed = _TYPED.get(key)
    if typed is not None:
        resource: pulumi.CustomResource = typed(name, **body, opts=opts)
        return resource
    return k8s.apiextensions.CustomResource(name, api_version=key[0], kind=key[1], **body, opts=opts)
