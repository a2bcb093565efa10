"""The Kubernetes side of a vLLM fleet: namespace, identity, API key mount, Deployment, Service, PodMonitoring,
HPA, PodDisruptionBudget, the ingress NetworkPolicy and, when asked, an InferencePool; and the Workload
Identity binding that lets the pods act as the serving account.

Why a component: these objects only work together (the HPA reads the metric the PodMonitoring scrapes; the
Service selects the Deployment's pods; the pods read the bucket as the account the KSA is bound to), so they
are made from one `FleetSpec` (components/gke/manifests.py) and registered in one place. Owns: every
Kubernetes object of the fleet and the serving account's workloadIdentityUser binding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gke import autoscaling, manifests, objects, tracks
from components.gke.manifests import FleetSpec
from components.wire import gcp
from components.wire.kubernetes import KubernetesObject
from serving.naming import TypeToken


@dataclass(frozen=True)
class VllmFleetArgs:
    project: str
    spec: FleetSpec
    # The serving account's resource name (projects/<p>/serviceAccounts/<email>), bound to the KSA.
    serving_account: pulumi.Input[str]
    # The endpoint picker Service an InferencePool names; None: no InferencePool of the fleet's own (behind the
    # inference gateway, components/gke/gateway.py registers the pools with their pickers).
    endpoint_picker: str | None = None
    # A gated rollout's (serving, candidate) tracks (components/gke/tracks.py); None: one Deployment.
    tracks: tuple[str, str] | None = None
    # The InferencePool whose picker metrics the HPA scales on (components/gke/autoscaling.py); None: each
    # pod's own vLLM queue.
    picker_pool: str | None = None
    target_kv_cache_utilization: float = 0.8
    # What the HPA waits for: the metrics adapter it reads through, the pickers that publish its metrics.
    autoscaler_after: Sequence[pulumi.Resource] = ()

    def __post_init__(self) -> None:
        if not self.project:
            raise ValueError("VllmFleetArgs.project is required")
        if self.tracks is not None and (self.tracks[0] == self.tracks[1] or not all(self.tracks)):
            raise ValueError(f"VllmFleetArgs.tracks {self.tracks}: need two different track names (serving, candidate)")


class VllmFleet(pulumi.ComponentResource):
    """Owns the fleet's Kubernetes objects; the node pool and cluster are the caller's."""

    service_name: pulumi.Output[str]
    # The internal (or allowed-ranges external) address, once the load balancer has one.
    endpoint: pulumi.Output[str]
    # A gated fleet's candidate Service address (internal); None for a direct fleet.
    candidate_endpoint: pulumi.Output[str] | None

    def __init__(
        self, name: str, args: VllmFleetArgs, provider: k8s.Provider, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TypeToken.GKE_FLEET, name, None, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self)
        on_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        namespace = objects.register(
            f"{name}-namespace",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": spec.namespace, "labels": dict(spec.labels)},
            },
            on_cluster,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace])
        # The KSA may act as the serving account (which reads the bucket and the API key secret, nothing else).
        binding = gcp.ServiceAccountIamMember(
            f"{name}-workload-identity",
            service_account_id=args.serving_account,
            role="roles/iam.workloadIdentityUser",
            member=f"serviceAccount:{args.project}.svc.id.goog[{spec.namespace}/{spec.name}]",
            opts=child,
        )
        account = objects.register(f"{name}-ksa", manifests.service_account(spec), in_namespace)
        key = objects.register(f"{name}-api-key", manifests.secret_provider_class(spec), in_namespace)
        after_identity = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[account, key, binding])
        if args.tracks is None:
            deployment = objects.register(f"{name}-deployment", manifests.deployment(spec), after_identity)
            service = objects.register(f"{name}-service", manifests.service(spec), in_namespace)
            hpa, pool = manifests.autoscaler(spec), _pool(spec, args.endpoint_picker)
            self.candidate_endpoint = None
        else:
            deployment, service, candidate = _tracks(name, spec, args.tracks, after_identity, in_namespace)
            hpa = tracks.serving_autoscaler(spec, args.tracks[0])
            pool = _pool(spec, args.endpoint_picker, serving=args.tracks[0])
            self.candidate_endpoint = candidate.status.apply(lambda status: _address(status, spec.port))
        objects.register(f"{name}-podmonitoring", manifests.pod_monitoring(spec), in_namespace)
        if args.picker_pool is not None:
            hpa = autoscaling.picker_autoscaler(
                spec,
                deployment=hpa["spec"]["scaleTargetRef"]["name"],
                pool=args.picker_pool,
                target_kv_cache_utilization=args.target_kv_cache_utilization,
            )
        objects.register(
            f"{name}-hpa",
            hpa,
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[deployment, *args.autoscaler_after]),
        )
        objects.register(f"{name}-pdb", manifests.disruption_budget(spec), in_namespace)
        objects.register(f"{name}-ingress", manifests.network_policy(spec), in_namespace)
        if pool is not None:
            objects.register(f"{name}-inference-pool", pool, in_namespace)
        self.service_name = service.metadata.apply(lambda metadata: (metadata or {}).get("name") or spec.name)
        self.endpoint = service.status.apply(lambda status: _address(status, spec.port))
        self.register_outputs(
            {
                "service_name": self.service_name,
                "endpoint": self.endpoint,
                "candidate_endpoint": self.candidate_endpoint,
            }
        )


def _pool(spec: FleetSpec, endpoint_picker: str | None, serving: str | None = None) -> dict[str, Any] | None:
    if endpoint_picker is None:
        return None
    if serving is None:
        return manifests.inference_pool(spec, endpoint_picker=endpoint_picker)
    return tracks.serving_inference_pool(spec, serving, endpoint_picker=endpoint_picker)


def _tracks(
    name: str,
    spec: FleetSpec,
    names: tuple[str, str],
    after_identity: pulumi.ResourceOptions,
    in_namespace: pulumi.ResourceOptions,
) -> tuple[KubernetesObject, KubernetesObject, KubernetesObject]:
    """Both tracks, the user Service on the serving one and the candidate Service. The serving track ignores
    template changes (`ignore_changes`), so a new template reaches the candidate only, until it is promoted."""
    serving, candidate = names
    keep_template = pulumi.ResourceOptions.merge(
        after_identity, pulumi.ResourceOptions(ignore_changes=["spec.template"])
    )
    serving_deployment = objects.register(
        f"{name}-{serving}",
        tracks.track_deployment(spec, serving, candidate=False),
        keep_template,
    )
    objects.register(
        f"{name}-{candidate}",
        tracks.track_deployment(spec, candidate, candidate=True),
        after_identity,
    )
    service = objects.register(f"{name}-service", tracks.user_service(spec, serving), in_namespace)
    candidate_service = objects.register(
        f"{name}-candidate-service", tracks.candidate_service(spec, candidate), in_namespace
    )
    return serving_deployment, service, candidate_service


def _address(status: Mapping[str, Any] | None, port: int) -> str:
    """The load balancer's address from a Service's status (wire keys, as the provider returns it)."""
    ingress = ((status or {}).get("loadBalancer") or {}).get("ingress") or []
    host = next(
        (item.get("ip") or item.get("hostname") for item in ingress if item.get("ip") or item.get("hostname")), None
    )
    return f"http://{host}:{port}" if host else ""
