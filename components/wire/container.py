"""Typed wire builders for Google Kubernetes Engine blocks: pulumi-gcp's `container` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.container import _inputs as container


def release_channel(
    **fields: Unpack[container.ClusterReleaseChannelArgsDict],
) -> container.ClusterReleaseChannelArgsDict:
    """`releaseChannel`: which GKE versions the cluster follows."""
    return cast("container.ClusterReleaseChannelArgsDict", wire(**fields))


def ip_allocation_policy(
    **fields: Unpack[container.ClusterIpAllocationPolicyArgsDict],
) -> container.ClusterIpAllocationPolicyArgsDict:
    """`ipAllocationPolicy`: VPC-native pod and service ranges (empty: GKE picks them)."""
    return cast("container.ClusterIpAllocationPolicyArgsDict", wire(**fields))


def private_cluster_config(
    **fields: Unpack[container.ClusterPrivateClusterConfigArgsDict],
) -> container.ClusterPrivateClusterConfigArgsDict:
    """`privateClusterConfig`: nodes without external IPs, and whether the endpoint is private."""
    return cast("container.ClusterPrivateClusterConfigArgsDict", wire(**fields))


def master_authorized_networks_config(
    **fields: Unpack[container.ClusterMasterAuthorizedNetworksConfigArgsDict],
) -> container.ClusterMasterAuthorizedNetworksConfigArgsDict:
    """`masterAuthorizedNetworksConfig`: who may reach the control plane's IP endpoint."""
    return cast("container.ClusterMasterAuthorizedNetworksConfigArgsDict", wire(**fields))


def cidr_block(
    **fields: Unpack[container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgsDict],
) -> container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgsDict:
    """`masterAuthorizedNetworksConfig.cidrBlocks[]`: one authorized range."""
    return cast("container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgsDict", wire(**fields))


def control_plane_endpoints_config(
    **fields: Unpack[container.ClusterControlPlaneEndpointsConfigArgsDict],
) -> container.ClusterControlPlaneEndpointsConfigArgsDict:
    """`controlPlaneEndpointsConfig`: the control plane's endpoints."""
    return cast("container.ClusterControlPlaneEndpointsConfigArgsDict", wire(**fields))


def dns_endpoint_config(
    **fields: Unpack[container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgsDict],
) -> container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgsDict:
    """`controlPlaneEndpointsConfig.dnsEndpointConfig`: the IAM-guarded DNS endpoint."""
    return cast("container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgsDict", wire(**fields))


def cluster_node_config(**fields: Unpack[container.ClusterNodeConfigArgsDict]) -> container.ClusterNodeConfigArgsDict:
    """`nodeConfig` of a cluster: the default pool GKE makes at creation (then removes)."""
    return cast("container.ClusterNodeConfigArgsDict", wire(**fields))


def cluster_shielded_instance_config(
    **fields: Unpack[container.ClusterNodeConfigShieldedInstanceConfigArgsDict],
) -> container.ClusterNodeConfigShieldedInstanceConfigArgsDict:
    """`nodeConfig.shieldedInstanceConfig` of a cluster's default pool."""
    return cast("container.ClusterNodeConfigShieldedInstanceConfigArgsDict", wire(**fields))


def workload_identity_config(
    **fields: Unpack[container.ClusterWorkloadIdentityConfigArgsDict],
) -> container.ClusterWorkloadIdentityConfigArgsDict:
    """`workloadIdentityConfig`: the pool pods' Kubernetes accounts act through."""
    return cast("container.ClusterWorkloadIdentityConfigArgsDict", wire(**fields))


def addons_config(**fields: Unpack[container.ClusterAddonsConfigArgsDict]) -> container.ClusterAddonsConfigArgsDict:
    """`addonsConfig`: the GKE add-ons the cluster runs."""
    return cast("container.ClusterAddonsConfigArgsDict", wire(**fields))


def gcs_fuse_csi_driver_config(
    **fields: Unpack[container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgsDict],
) -> container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgsDict:
    """`addonsConfig.gcsFuseCsiDriverConfig`: Cloud Storage FUSE volumes."""
    return cast("container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgsDict", wire(**fields))


def horizontal_pod_autoscaling(
    **fields: Unpack[container.ClusterAddonsConfigHorizontalPodAutoscalingArgsDict],
) -> container.ClusterAddonsConfigHorizontalPodAutoscalingArgsDict:
    """`addonsConfig.horizontalPodAutoscaling`."""
    return cast("container.ClusterAddonsConfigHorizontalPodAutoscalingArgsDict", wire(**fields))


def http_load_balancing(
    **fields: Unpack[container.ClusterAddonsConfigHttpLoadBalancingArgsDict],
) -> container.ClusterAddonsConfigHttpLoadBalancingArgsDict:
    """`addonsConfig.httpLoadBalancing`: what the Gateway's load balancer needs."""
    return cast("container.ClusterAddonsConfigHttpLoadBalancingArgsDict", wire(**fields))


def secret_manager_config(
    **fields: Unpack[container.ClusterSecretManagerConfigArgsDict],
) -> container.ClusterSecretManagerConfigArgsDict:
    """`secretManagerConfig`: Secret Manager volumes for pods."""
    return cast("container.ClusterSecretManagerConfigArgsDict", wire(**fields))


def monitoring_config(
    **fields: Unpack[container.ClusterMonitoringConfigArgsDict],
) -> container.ClusterMonitoringConfigArgsDict:
    """`monitoringConfig`: the system metrics GKE sends."""
    return cast("container.ClusterMonitoringConfigArgsDict", wire(**fields))


def managed_prometheus(
    **fields: Unpack[container.ClusterMonitoringConfigManagedPrometheusArgsDict],
) -> container.ClusterMonitoringConfigManagedPrometheusArgsDict:
    """`monitoringConfig.managedPrometheus`: Managed Service for Prometheus."""
    return cast("container.ClusterMonitoringConfigManagedPrometheusArgsDict", wire(**fields))


def gateway_api_config(
    **fields: Unpack[container.ClusterGatewayApiConfigArgsDict],
) -> container.ClusterGatewayApiConfigArgsDict:
    """`gatewayApiConfig`: the Gateway API channel."""
    return cast("container.ClusterGatewayApiConfigArgsDict", wire(**fields))


def node_config(**fields: Unpack[container.NodePoolNodeConfigArgsDict]) -> container.NodePoolNodeConfigArgsDict:
    """`nodeConfig` of a node pool: its machines, identity and hardening."""
    return cast("container.NodePoolNodeConfigArgsDict", wire(**fields))


def workload_metadata_config(
    **fields: Unpack[container.NodePoolNodeConfigWorkloadMetadataConfigArgsDict],
) -> container.NodePoolNodeConfigWorkloadMetadataConfigArgsDict:
    """`nodeConfig.workloadMetadataConfig`: pods see the GKE metadata server."""
    return cast("container.NodePoolNodeConfigWorkloadMetadataConfigArgsDict", wire(**fields))


def shielded_instance_config(
    **fields: Unpack[container.NodePoolNodeConfigShieldedInstanceConfigArgsDict],
) -> container.NodePoolNodeConfigShieldedInstanceConfigArgsDict:
    """`nodeConfig.shieldedInstanceConfig`: secure boot and integrity monitoring."""
    return cast("container.NodePoolNodeConfigShieldedInstanceConfigArgsDict", wire(**fields))


def guest_accelerator(
    **fields: Unpack[container.NodePoolNodeConfigGuestAcceleratorArgsDict],
) -> container.NodePoolNodeConfigGuestAcceleratorArgsDict:
    """`nodeConfig.guestAccelerators[]`: a node's GPUs."""
    return cast("container.NodePoolNodeConfigGuestAcceleratorArgsDict", wire(**fields))


def gpu_driver_installation_config(
    **fields: Unpack[container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgsDict],
) -> container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgsDict:
    """`guestAccelerators[].gpuDriverInstallationConfig`: which driver GKE installs."""
    return cast("container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgsDict", wire(**fields))


def reservation_affinity(
    **fields: Unpack[container.NodePoolNodeConfigReservationAffinityArgsDict],
) -> container.NodePoolNodeConfigReservationAffinityArgsDict:
    """`nodeConfig.reservationAffinity`: whether nodes consume a reservation."""
    return cast("container.NodePoolNodeConfigReservationAffinityArgsDict", wire(**fields))


def autoscaling(**fields: Unpack[container.NodePoolAutoscalingArgsDict]) -> container.NodePoolAutoscalingArgsDict:
    """`autoscaling`: a node pool's node counts and where it looks for capacity."""
    return cast("container.NodePoolAutoscalingArgsDict", wire(**fields))


def management(**fields: Unpack[container.NodePoolManagementArgsDict]) -> container.NodePoolManagementArgsDict:
    """`management`: auto-repair and auto-upgrade."""
    return cast("container.NodePoolManagementArgsDict", wire(**fields))
