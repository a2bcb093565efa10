"""A GKE Standard cluster ready for a vLLM fleet, or an existing one, and a Kubernetes provider for it.

Why a component: the fleet's promises need cluster features (Workload Identity for least privilege, the
GCS FUSE CSI driver for the weights, the Secret Manager add-on for the API key, Managed Prometheus for the
HPA's metric). A created cluster turns them on; an existing one is read, not changed, and the plan's notes
say what it must have. Owns: the cluster and its small system node pool (created), and the provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from serving.naming import TypeToken

# The kubeconfig authenticates through gke-gcloud-auth-plugin (the caller's own Google credentials): it
# holds no token, so nothing secret lands in the state or the plan.
_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://{endpoint}
    certificate-authority-data: {ca}
contexts:
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
    gateway_api: bool = False


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
        if isinstance(self.cluster, CreatedCluster) and not self.cluster.node_zones:
            raise ValueError("GkeClusterArgs.cluster.node_zones: at least one zone for the nodes")


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
            ca: pulumi.Output[str] = cluster.master_auth.cluster_ca_certificate.apply(lambda value: value or "")
        else:
            found = gcp.container.get_cluster_output(
                name=spec.name,
                location=spec.location,
                project=args.project,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.name = pulumi.Output.from_input(spec.name)
            endpoint = found.endpoint
            ca = found.master_auths.apply(lambda auths: auths[0].cluster_ca_certificate if auths else "")
        self.endpoint = endpoint
        self.path = self.name.apply(
            lambda cluster: f"projects/{args.project}/locations/{spec.location}/clusters/{cluster}"
        )
        kubeconfig = pulumi.Output.all(self.name, endpoint, ca).apply(
            lambda values: _KUBECONFIG.format(name=values[0], endpoint=values[1], ca=values[2])
        )
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig, opts=child)
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "path": self.path})

    def _create(
        self,
        name: str,
        project: str,
        spec: CreatedCluster,
        labels: Mapping[str, str],
        child: pulumi.ResourceOptions,
    ) -> gcp.container.Cluster:
        container = gcp.container
        cluster = container.Cluster(
            f"{name}-cluster",
            name=spec.name,
            project=project,
            location=spec.location,
            node_locations=list(spec.node_zones),
            # Node pools are managed apart (system and accelerators); GKE needs one at creation, then it goes.
            remove_default_node_pool=True,
            initial_node_count=1,
            min_master_version=spec.kubernetes_version,
            release_channel=container.ClusterReleaseChannelArgs(channel=spec.release_channel),
            network=spec.network,
            subnetwork=spec.subnetwork,
            ip_allocation_policy=container.ClusterIpAllocationPolicyArgs(),
            workload_identity_config=container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{project}.svc.id.goog"
            ),
            addons_config=container.ClusterAddonsConfigArgs(
                gcs_fuse_csi_driver_config=container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
                horizontal_pod_autoscaling=container.ClusterAddonsConfigHorizontalPodAutoscalingArgs(disabled=False),
                http_load_balancing=container.ClusterAddonsConfigHttpLoadBalancingArgs(disabled=False),
            ),
            secret_manager_config=container.ClusterSecretManagerConfigArgs(enabled=True),
            monitoring_config=container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS"],
                managed_prometheus=container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            gateway_api_config=(
                container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD") if spec.gateway_api else None
            ),
            resource_labels=dict(labels),
            deletion_protection=spec.deletion_protection,
            opts=child,
        )
        container.NodePool(
            f"{name}-system",
            name="system",
            project=project,
            cluster=cluster.name,
            location=spec.location,
            node_count=1,
            node_config=container.NodePoolNodeConfigArgs(
                machine_type=spec.system_machine_type,
                workload_metadata_config=container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
                oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                resource_labels=dict(labels),
            ),
            opts=child,
        )
        return cluster
