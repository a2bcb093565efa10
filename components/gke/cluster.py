"""A GKE Standard cluster ready for a vLLM fleet, or an existing one, and a Kubernetes provider for it.

Why a component: the fleet's promises need cluster features (Workload Identity for least privilege, the
GCS FUSE CSI driver for the weights, the Secret Manager add-on for the API key, Managed Prometheus for the
HPA's metric). A created cluster turns them on; an existing one is read, not changed, and the plan's notes
say what it must have. Owns: the cluster, its small system node pool and the region's Cloud NAT (created),
and the provider.

Private by default (GKE's hardening guide and network isolation guide): nodes have no external IP, the
control plane's public IP endpoint is off unless authorized networks are named, and Pulumi reaches the
Kubernetes API through the cluster's DNS endpoint, which Google authenticates with IAM before RBAC; every
node (system pool too) runs as the stack's own node account, on Shielded VMs (secure boot, integrity
monitoring).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gke.node_pool import CLOUD_PLATFORM_SCOPE, SHIELDED
from components.wire import compute, container, gcp
from policy.source_ranges import describe, too_wide
from serving.naming import TypeToken

# The kubeconfig authenticates through gke-gcloud-auth-plugin (the caller's own Google credentials): it
# holds no token, so nothing secret lands in the state or the plan. The DNS endpoint presents a publicly
# trusted certificate (no cluster CA line); an IP endpoint presents the cluster's own CA.
_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://{endpoint}
{ca_line}contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
current-context: {name}
users:
- name: {name}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin)
      provideClusterInfo: true
"""


def kubeconfig(name: str, endpoint: str, ca: str | None) -> str:
    ca_line = f"    certificate-authority-data: {ca}\n" if ca else ""
    return _KUBECONFIG.format(name=name, endpoint=endpoint, ca_line=ca_line)


@dataclass(frozen=True)
class CreatedCluster:
    """A Standard cluster the stack creates (regional, nodes in `node_zones`)."""

    name: str
    location: str
    node_zones: Sequence[str]
    kubernetes_version: str
    release_channel: str
    network: str
    subnetwork: str | None
    system_machine_type: str
    deletion_protection: bool
    # The nodes' own Google account (components/gke/node_identity.py): never the Compute Engine default.
    node_service_account: pulumi.Input[str]
    gateway_api: bool = False
    # IPv4 CIDRs allowed on the control plane's public IP endpoint; empty: that endpoint is off.
    authorized_networks: Sequence[str] = ()
    # Cloud NAT for the private nodes' internet egress (a Router and a RouterNat in the region).
    cloud_nat: bool = True


@dataclass(frozen=True)
class ExistingCluster:
    """A cluster that already exists: read, never changed."""

    name: str
    location: str


@dataclass(frozen=True)
class GkeClusterArgs:
    project: str
    cluster: CreatedCluster | ExistingCluster
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.cluster.name or not self.cluster.location:
            raise ValueError("GkeClusterArgs.cluster: a name and a location are required")
        if isinstance(self.cluster, CreatedCluster):
            if not self.cluster.node_zones:
                raise ValueError("GkeClusterArgs.cluster.node_zones: at least one zone for the nodes")
            if wide := too_wide(list(self.cluster.authorized_networks)):
                raise ValueError(
                    f"GkeClusterArgs.cluster.authorized_networks {list(self.cluster.authorized_networks)} let in "
                    f"{'; '.join(describe(item) for item in wide)}"
                )


class GkeCluster(pulumi.ComponentResource):
    """Owns: the created cluster and its system pool (or nothing, for an existing one), and the provider."""

    name: pulumi.Output[str]
    location: str
    endpoint: pulumi.Output[str]
    # `projects/<p>/locations/<l>/clusters/<name>`.
    path: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.GKE_CLUSTER, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.cluster
        self.location = spec.location
        if isinstance(spec, CreatedCluster):
            cluster = self._create(name, args.project, spec, args.labels, child)
            self.name = cluster.name
            endpoint: pulumi.Output[str] = cluster.endpoint
            # Pulumi talks to the IAM-guarded DNS endpoint: the public IP endpoint may be off.
            api_host: pulumi.Output[str] = cluster.control_plane_endpoints_config.apply(_dns_endpoint)
            ca: pulumi.Output[str | None] = pulumi.Output.from_input(None)
        else:
            # Only a stack on an existing cluster loads pulumi_gcp.container (~0.6 s): the invoke's result type.
            from pulumi_gcp.container import get_cluster_output  # noqa: PLC0415 - see above

            found = get_cluster_output(
                name=spec.name,
                location=spec.location,
                project=args.project,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.name = pulumi.Output.from_input(spec.name)
            endpoint = found.endpoint
            api_host = found.endpoint
            ca = found.master_auths.apply(lambda auths: auths[0].cluster_ca_certificate if auths else "")
        self.endpoint = endpoint
        self.path = self.name.apply(
            lambda cluster: f"projects/{args.project}/locations/{spec.location}/clusters/{cluster}"
        )
        config = pulumi.Output.all(self.name, api_host, ca).apply(
            lambda values: kubeconfig(values[0], values[1], values[2])
        )
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=config, opts=child)
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "path": self.path})

    def _create(
        self,
        name: str,
        project: str,
        spec: CreatedCluster,
        labels: Mapping[str, str],
        child: pulumi.ResourceOptions,
    ) -> gcp.Cluster:
        cluster = gcp.Cluster(
            f"{name}-cluster",
            name=spec.name,
            project=project,
            location=spec.location,
            node_locations=list(spec.node_zones),
            # Node pools are managed apart (system and accelerators); GKE needs one at creation, then it goes.
            remove_default_node_pool=True,
            initial_node_count=1,
            min_master_version=spec.kubernetes_version,
            release_channel=container.release_channel(channel=spec.release_channel),
            network=spec.network,
            subnetwork=spec.subnetwork,
            ip_allocation_policy=container.ip_allocation_policy(),
            # No external IP on any node; the public IP endpoint only for named networks.
            private_cluster_config=container.private_cluster_config(
                enable_private_nodes=True, enable_private_endpoint=not spec.authorized_networks
            ),
            master_authorized_networks_config=container.master_authorized_networks_config(
                cidr_blocks=[
                    container.cidr_block(cidr_block=block, display_name=f"authorized-{index}")
                    for index, block in enumerate(spec.authorized_networks)
                ],
                # Not "any Google Cloud address": that is anyone with a VM.
                gcp_public_cidrs_access_enabled=False,
            ),
            control_plane_endpoints_config=container.control_plane_endpoints_config(
                dns_endpoint_config=container.dns_endpoint_config(allow_external_traffic=True),
            ),
            enable_shielded_nodes=True,
            # Dataplane V2 enforces the fleet's NetworkPolicy (without an enforcer it is a no-op).
            datapath_provider="ADVANCED_DATAPATH",
            # The default pool GKE makes at creation (then removes) runs as the node account too.
            node_config=container.cluster_node_config(
                service_account=spec.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                shielded_instance_config=container.cluster_shielded_instance_config(**SHIELDED),
            ),
            workload_identity_config=container.workload_identity_config(workload_pool=f"{project}.svc.id.goog"),
            addons_config=container.addons_config(
                gcs_fuse_csi_driver_config=container.gcs_fuse_csi_driver_config(enabled=True),
                horizontal_pod_autoscaling=container.horizontal_pod_autoscaling(disabled=False),
                http_load_balancing=container.http_load_balancing(disabled=False),
            ),
            secret_manager_config=container.secret_manager_config(enabled=True),
            monitoring_config=container.monitoring_config(
                enable_components=["SYSTEM_COMPONENTS"],
                managed_prometheus=container.managed_prometheus(enabled=True),
            ),
            gateway_api_config=(container.gateway_api_config(channel="CHANNEL_STANDARD") if spec.gateway_api else None),
            resource_labels=dict(labels),
            deletion_protection=spec.deletion_protection,
            opts=child,
        )
        gcp.NodePool(
            f"{name}-system",
            name="system",
            project=project,
            cluster=cluster.name,
            location=spec.location,
            node_count=1,
            node_config=container.node_config(
                machine_type=spec.system_machine_type,
                workload_metadata_config=container.workload_metadata_config(mode="GKE_METADATA"),
                service_account=spec.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                shielded_instance_config=container.shielded_instance_config(**SHIELDED),
                resource_labels=dict(labels),
            ),
            opts=child,
        )
        if spec.cloud_nat:
            _cloud_nat(name, project, spec, child)
        return cluster


def _dns_endpoint(config: Mapping[str, Any] | None) -> str:
    """The cluster's DNS endpoint from `controlPlaneEndpointsConfig` (wire keys, as the provider returns it)."""
    dns = (config or {}).get("dnsEndpointConfig") or {}
    return str(dns.get("endpoint") or "")


def _cloud_nat(name: str, project: str, spec: CreatedCluster, child: pulumi.ResourceOptions) -> None:
    """Egress to the internet for nodes without external IPs (image pulls from outside Google, Hugging Face)."""
    router = gcp.Router(
        f"{name}-router",
        name=f"{spec.name}-nat",
        project=project,
        region=spec.location,
        network=spec.network,
        opts=child,
    )
    gcp.RouterNat(
        f"{name}-nat",
        name=f"{spec.name}-nat",
        project=project,
        region=spec.location,
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
        log_config=compute.router_nat_log_config(enable=True, filter="ERRORS_ONLY"),
        opts=child,
    )
