"""Kubernetes objects by pulumi-kubernetes' type tokens, registered from plain manifests (see `components.wire`).

Why not the generated classes: `pulumi_kubernetes.core.v1` alone loads every core type (about half a
second on a quiet machine), and a GKE plan used seven API groups. A manifest here registers what the
generated class of its kind registers: the type token (`kubernetes:core/v1:Service`,
`kubernetes:apps/v1:Deployment`...), the manifest's own (wire) fields, the `status` output where the
kind has one, the generated class's aliases and the SDK's provider version. Kinds without a generated
class (CRDs' kinds: PodMonitoring, InferencePool, Gateway...) register as pulumi-kubernetes'
`CustomResource` does: `kubernetes:<apiVersion>:<kind>`. The Kubernetes provider resource itself stays
the SDK's `pulumi_kubernetes.Provider` (its module is part of the package's own small import).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pulumi
from pulumi_kubernetes import _utilities as k8s_sdk  # the SDK's own resource defaults: it has no public API for them


@dataclass(frozen=True)
class _Kind:
    """What a built-in kind's generated class adds: former type tokens, and whether it has a `status`."""

    aliases: tuple[str, ...] = ()
    status: bool = True


def _rbac(kind: str) -> _Kind:
    group = "kubernetes:rbac.authorization.k8s.io"
    return _Kind(aliases=(f"{group}/v1alpha1:{kind}", f"{group}/v1beta1:{kind}"), status=False)


# (apiVersion, kind) -> the generated class's additions, for every built-in kind the project registers
# (tests/components/test_wire.py compares them with the installed SDK's generated source).
BUILT_IN: dict[tuple[str, str], _Kind] = {
    ("v1", "Namespace"): _Kind(),
    ("v1", "ServiceAccount"): _Kind(status=False),
    ("v1", "Service"): _Kind(),
    ("v1", "ConfigMap"): _Kind(status=False),
    ("apps/v1", "Deployment"): _Kind(
        aliases=(
            "kubernetes:apps/v1beta1:Deployment",
            "kubernetes:apps/v1beta2:Deployment",
            "kubernetes:extensions/v1beta1:Deployment",
        )
    ),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _Kind(
        aliases=(
            "kubernetes:autoscaling/v1:HorizontalPodAutoscaler",
            "kubernetes:autoscaling/v2beta1:HorizontalPodAutoscaler",
            "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler",
        )
    ),
    ("policy/v1", "PodDisruptionBudget"): _Kind(aliases=("kubernetes:policy/v1beta1:PodDisruptionBudget",)),
    ("networking.k8s.io/v1", "NetworkPolicy"): _Kind(aliases=("kubernetes:extensions/v1beta1:NetworkPolicy",)),
    ("rbac.authorization.k8s.io/v1", "Role"): _rbac("Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _rbac("RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): _rbac("ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _rbac("ClusterRoleBinding"),
    ("apiregistration.k8s.io/v1", "APIService"): _Kind(
        aliases=(
            "kubernetes:apiregistration.k8s.io/v1beta1:APIService",
            "kubernetes:apiregistration/v1beta1:APIService",
            "kubernetes:apiregistration/v1:APIService",
        )
    ),
}


def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' token: the core group is spelled `core`; a CRD's kind keeps its apiVersion."""
    if (api_version, kind) in BUILT_IN and "/" not in api_version:
        return f"kubernetes:core/{api_version}:{kind}"
    return f"kubernetes:{api_version}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """One Kubernetes object from its manifest (a plain dict), named `name` in Pulumi (not metadata.name)."""

    def __init__(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        api_version, kind = manifest["apiVersion"], manifest["kind"]
        built_in = BUILT_IN.get((api_version, kind))
        props = {key: value for key, value in manifest.items() if value is not None}
        props.setdefault("metadata", None)
        defaults = k8s_sdk.get_resource_opts_defaults()
        if built_in is None:
            # As pulumi-kubernetes' CustomResource: the caller's options, then the SDK's version.
            merged = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=defaults.version))
        else:
            merged = pulumi.ResourceOptions.merge(defaults, opts)
            if built_in.aliases:
                merged = pulumi.ResourceOptions.merge(
                    merged, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=token) for token in built_in.aliases])
                )
            if built_in.status:
                props["status"] = None
        super().__init__(type_token(api_version, kind), name, props, merged)

    @property
    def metadata(self) -> pulumi.Output[dict[str, Any] | None]:
        """The object's metadata as the cluster returns it (wire keys: `name`, `namespace`, `labels`...)."""
        return cast("pulumi.Output[dict[str, Any] | None]", self.__dict__["metadata"])

    @property
    def status(self) -> pulumi.Output[dict[str, Any] | None]:
        """The object's status (wire keys, e.g. a Service's `loadBalancer.ingress[].ip`)."""
        return cast("pulumi.Output[dict[str, Any] | None]", self.__dict__["status"])
