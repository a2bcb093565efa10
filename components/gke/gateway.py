"""A fleet's inference gateway: GKE's internal Application Load Balancer (Gateway class `gke-l7-rilb`)
routing through llm-d's endpoint picker, which sends each request to the replica with the best mix of
queue depth, KV-cache room and prefix-cache hits (components/gke/gateway_manifests.py says what and why).

Why a component: a Gateway needs a proxy-only subnet in its region (Envoy's addresses) and an internal
address to be stable; the picker needs its account, Role, config and Service before the InferencePool
names it; and the HTTPRoute must come last, when every pool it names exists. Owns: the proxy-only subnet
(unless the VPC's region has one), the gateway's reserved internal address, and every object of
`gateway_manifests`. Does not own: the vLLM pods (VllmFleet), the CRDs (GKE's own from 1.34.0-gke.1626000).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.gke import gateway_manifests as manifests
from components.gke import objects
from components.gke.gateway_manifests import GatewaySpec
from components.wire import gcp
from serving.naming import TypeToken


@dataclass(frozen=True)
class GatewayNetwork:
    """Where the load balancer lives: the cluster's VPC and subnet, and the proxy-only subnet's range."""

    project: str
    region: str
    network: str
    # The regular subnet the gateway's internal address comes from (an auto-mode VPC's is named after it).
    subnetwork: str
    # A /23 (or wider) range for Envoy's proxies; None when the VPC already has an ACTIVE proxy-only subnet
    # in the region (there may be only one).
    proxy_subnet_range: str | None


@dataclass(frozen=True)
class InferenceGatewayArgs:
    spec: GatewaySpec
    network: GatewayNetwork

    def __post_init__(self) -> None:
        if not self.network.project or not self.network.region:
            raise ValueError("InferenceGatewayArgs.network: project and region are required")


class InferenceGateway(pulumi.ComponentResource):
    """Owns the gateway, its route, the pools and their pickers, the proxy-only subnet and the address."""

    # `http://<internal address>` (port 80): what verify and clients inside the VPC call.
    endpoint: pulumi.Output[str]
    gateway_name: str
    pools: list[str]
    # The pods the autoscaler's metrics come from (what an HPA on the picker's numbers waits for).
    pickers: list[pulumi.Resource]
    # Their names, which are also their pods' `app` label (what a NetworkPolicy admits).
    pickers_by_name: list[str]

    def __init__(
        self,
        name: str,
        args: InferenceGatewayArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TypeToken.GKE_INFERENCE_GATEWAY, name, None, opts)
        spec, net = args.spec, args.network
        child = pulumi.ResourceOptions(parent=self)
        network_path = f"projects/{net.project}/global/networks/{net.network}"
        before_gateway: list[pulumi.Resource] = []
        if net.proxy_subnet_range is not None:
            before_gateway.append(
                gcp.Subnetwork(
                    f"{name}-proxy-only",
                    project=net.project,
                    region=net.region,
                    network=network_path,
                    ip_cidr_range=net.proxy_subnet_range,
                    purpose="REGIONAL_MANAGED_PROXY",
                    role="ACTIVE",
                    description="Envoy proxies of the fleet's internal Application Load Balancer (GKE Gateway)",
                    opts=child,
                )
            )
        address = gcp.Address(
            f"{name}-address",
            project=net.project,
            region=net.region,
            address_type="INTERNAL",
            subnetwork=f"projects/{net.project}/regions/{net.region}/subnetworks/{net.subnetwork}",
            description="The fleet's inference gateway (internal)",
            opts=child,
        )
        on_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        self.pickers = []
        pool_objects: list[pulumi.Resource] = []
        for pool in spec.pools:
            for manifest in manifests.pool_objects(spec, pool):
                resource = objects.register(
                    f"{name}-{manifest['kind'].lower()}-{manifest['metadata']['name']}", manifest, on_cluster
                )
                pool_objects.append(resource)
                if manifest["kind"] == "Deployment":
                    self.pickers.append(resource)
        gateway_manifest = manifests.gateway(spec)
        gateway_manifest["spec"]["addresses"] = [{"type": "NamedAddress", "value": address.name}]
        gateway = objects.register(
            f"{name}-gateway",
            gateway_manifest,
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*before_gateway, address]),
        )
        objects.register(
            f"{name}-route",
            manifests.http_route(spec),
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[gateway, *pool_objects]),
        )
        self.gateway_name = spec.gateway_name
        self.pools = [pool.name for pool in spec.pools]
        self.pickers_by_name = [pool.picker for pool in spec.pools]
        self.endpoint = address.address.apply(lambda ip: f"http://{ip}" if ip else "")
        self.register_outputs({"endpoint": self.endpoint})
