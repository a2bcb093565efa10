"""What stands between a GKE fleet's users and its pods, and what its autoscaler reads through: the inference
gateway (or the plain Service) and the Custom Metrics Stackdriver Adapter.

Why a module apart from deploy/gke.py: the cluster, node pool and workload wiring change for other reasons
(private clusters, node shapes) than routing does; here the settings' routing choice is matched once and
mapped to the two components' Args.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gke.gateway import GatewayNetwork, InferenceGateway, InferenceGatewayArgs
from components.gke.gateway_manifests import GatewaySpec, PoolSpec
from components.gke.metrics_adapter import MetricsAdapter, MetricsAdapterArgs
from components.gke.tracks import TRACK_LABEL
from deploy.context import StackContext
from serving.naming import GKE_APP_LABEL
from stacks.settings import GkeStack


def metrics_adapter(
    settings: GkeStack, context: StackContext, provider: k8s.Provider, opts: pulumi.ResourceOptions
) -> MetricsAdapter | None:
    """The adapter the HPA reads Managed Prometheus through, unless the (existing) cluster runs its own."""
    if not settings.gke.metrics_adapter:
        return None
    return MetricsAdapter(
        context.names.gke_metrics_adapter,
        MetricsAdapterArgs(
            project=context.project,
            account_id=context.names.account_id("metrics"),
            display_name=context.names.display_name("GKE metrics adapter"),
        ),
        provider,
        opts,
    )


def gateway_spec(settings: GkeStack, context: StackContext) -> GatewaySpec | None:
    """The pools and their weights: one pool over the fleet, or one per track of a gated fleet."""
    gke = settings.gke
    if not gke.uses_gateway:
        return None
    name = context.names.serving
    selector = {GKE_APP_LABEL: name}
    labels = dict(context.labels)
    if not gke.rollout.gated:
        return GatewaySpec(
            name=name,
            namespace=gke.namespace,
            port=settings.port,
            pools=[PoolSpec(context.names.inference_pool(), selector)],
            labels=labels,
            lora_affinity=bool(settings.adapters),
            proxy_range=_proxy_range(settings),
        )
    serving, candidate = gke.rollout.serving_track, gke.rollout.candidate_track
    pools = [
        PoolSpec(context.names.inference_pool(track), {**selector, TRACK_LABEL: track})
        for track in (serving, candidate)
    ]
    share = gke.rollout.candidate_percent
    return GatewaySpec(
        name=name,
        namespace=gke.namespace,
        port=settings.port,
        pools=pools,
        weights={pools[0].name: 100 - share, pools[1].name: share},
        labels=labels,
        lora_affinity=bool(settings.adapters),
        proxy_range=_proxy_range(settings),
    )


def _proxy_range(settings: GkeStack) -> str:
    """The proxy-only subnet's range (the settings refuse a gateway without one they can name)."""
    proxy_range = settings.gke.gateway.proxy_range
    if proxy_range is None:  # pragma: no cover - GkeSettings refuses it
        raise ValueError("gke.gateway: the proxy-only subnet's range is unknown")
    return proxy_range


def inference_gateway(
    settings: GkeStack, context: StackContext, provider: k8s.Provider, opts: pulumi.ResourceOptions
) -> InferenceGateway | None:
    spec = gateway_spec(settings, context)
    if spec is None:
        return None
    cluster = settings.gke.cluster
    return InferenceGateway(
        context.names.gke_inference_gateway,
        InferenceGatewayArgs(
            spec=spec,
            network=GatewayNetwork(
                project=context.project,
                region=settings.region,
                network=cluster.network,
                subnetwork=cluster.subnetwork or cluster.network,
                proxy_subnet_range=settings.gke.gateway.proxy_subnet_range,
            ),
        ),
        provider,
        opts,
    )


def picker_peers(gateway: InferenceGateway | None) -> list[dict[str, Any]]:
    """The NetworkPolicy peers the fleet admits besides its own list: each pool's endpoint picker pods."""
    if gateway is None:
        return []
    return [{"podSelector": {"matchLabels": {GKE_APP_LABEL: picker}}} for picker in gateway.pickers_by_name]


def gateway_outputs(gateway: InferenceGateway | None) -> dict[str, Any]:
    """What verify reads of the gateway; nothing when the fleet is reached through its Service."""
    if gateway is None:
        return {}
    return {
        "gateway": gateway.gateway_name,
        "gateway_endpoint": gateway.endpoint,
        "inference_pools": gateway.pools,
    }
