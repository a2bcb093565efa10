"""The Kubernetes side of a vLLM fleet: namespace, identity, API key mount, Deployment, Service, PodMonitoring,
HPA, PodDisruptionBudget, the ingress NetworkPolicy and, when asked, an InferencePool; and the Workload
Identity binding that lets the pods act as the serving account.

Why a component: these objects only work together (the HPA reads the metric the PodMonitoring scrapes; the
Service selects the Deployment's pods; the pods read the bucket as the account the KSA is bound to), so they
are made from one `FleetSpec` (components/gke/manifests.py) and registered in one place. Owns: every
Kubernetes object of the fleet and the serving account's workloadIdentityUser binding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.gke import autoscaling, manifests, tracks
from components.gke.manifests import FleetSpec
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


def _object(kind: type[Any], name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:  # noqa: ANN401 - any k8s resource
    body = {key: value for key, value in manifest.items() if key not in {"apiVersion", "kind"}}
    return kind(name, **body, opts=opts)


def _custom(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


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
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": spec.namespace, "labels": dict(spec.labels)}, opts=on_cluster
        )
        in_namespace = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace])
        # The KSA may act as the serving account (which reads the bucket and the API key secret, nothing else).
        binding = gcp.serviceaccount.IAMMember(
            f"{name}-workload-identity",
            service_account_id=args.serving_account,
            role="roles/iam.workloadIdentityUser",
            member=f"serviceAccount:{args.project}.svc.id.goog[{spec.namespace}/{spec.name}]",
            opts=child,
        )
        account = _object(k8s.core.v1.ServiceAccount, f"{name}-ksa", manifests.service_account(spec), in_namespace)
        key = _custom(f"{name}-api-key", manifests.secret_provider_class(spec), in_namespace)
        after_identity = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[account, key, binding])
        if args.tracks is None:
            deployment = _object(
                k8s.apps.v1.Deployment, f"{name}-deployment", manifests.deployment(spec), after_identity
            )
            service = _object(k8s.core.v1.Service, f"{name}-service", manifests.service(spec), in_namespace)
            hpa, pool = manifests.autoscaler(spec), _pool(spec, args.endpoint_picker)
            self.candidate_endpoint = None
        else:
            deployment, service, candidate = _tracks(name, spec, args.tracks, after_identity, in_namespace)
            hpa = tracks.serving_autoscaler(spec, args.tracks[0])
            pool = _pool(spec, args.endpoint_picker, serving=args.tracks[0])
            self.candidate_endpoint = candidate.status.apply(lambda status: _address(status, spec.port))
        _custom(f"{name}-podmonitoring", manifests.pod_monitoring(spec), in_namespace)
        if args.picker_pool is not None:
            hpa = autoscaling.picker_autoscaler(
                spec,
                deployment=hpa["spec"]["scaleTargetRef"]["name"],
                pool=args.picker_pool,
                target_kv_cache_utilization=args.target_kv_cache_utilization,
            )
        _object(
            k8s.autoscaling.v2.HorizontalPodAutoscaler,
            f"{name}-hpa",
            hpa,
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[deployment, *args.autoscaler_after]),
        )
        _object(k8s.policy.v1.PodDisruptionBudget, f"{name}-pdb", manifests.disruption_budget(spec), in_namespace)
        _object(k8s.networking.v1.NetworkPolicy, f"{name}-ingress", manifests.network_policy(spec), in_namespace)
        if pool is not None:
            _custom(f"{name}-inference-pool", pool, in_namespace)
        self.service_name = service.metadata.apply(lambda metadata: metadata.name or spec.name)
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
) -> tuple[Any, Any, Any]:
    """Both tracks, the user Service on the serving one and the candidate Service. The serving track ignores
    template changes (`ignore_changes`), so a new template reaches the candidate only, until it is promoted."""
    serving, candidate = names
    keep_template = pulumi.ResourceOptions.merge(
        after_identity, pulumi.ResourceOptions(ignore_changes=["spec.template"])
    )
    serving_deployment = _object(
        k8s.apps.v1.Deployment,
        f"{name}-{serving}",
        tracks.track_deployment(spec, serving, candidate=False),
        keep_template,
    )
    _object(
        k8s.apps.v1.Deployment,
        f"{name}-{candidate}",
        tracks.track_deployment(spec, candidate, candidate=True),
        after_identity,
    )
    service = _object(k8s.core.v1.Service, f"{name}-service", tracks.user_service(spec, serving), in_namespace)
    candidate_service = _object(
        k8s.core.v1.Service, f"{name}-candidate-service", tracks.candidate_service(spec, candidate), in_namespace
    )
    return serving_deployment, service, candidate_service


def _address(status: Any, port: int) -> str:  # noqa: ANN401 - the Service's status output
    ingress = (status.load_balancer.ingress or []) if status is not None and status.load_balancer else []
    host = next((item.ip or item.hostname for item in ingress if item.ip or item.hostname), None)
    return f"http://{host}:{port}" if host else ""
