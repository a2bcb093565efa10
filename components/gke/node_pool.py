"""The accelerator node pool of a fleet: one machine shape, autoscaled from min (0) to max nodes.

Why a component: spot, flex-start and on-demand nodes differ in a few flags that are easy to get half
right (flex-start needs autoscaling and no reservation; a GPU pool needs its driver installed; a TPU pool
is selected by its topology). Owns: the node pool and the nodes' own identity's grants.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from serving.gke_machines import NodeShape
from serving.naming import TypeToken

# What GKE nodes need to write their logs and metrics (GKE's hardening guide, "use least privilege service
# accounts for your nodes"); image pulls are granted by the mirror on its own repository.
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
)


class Tier(enum.StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    FLEX_START = "flex-start"


@dataclass(frozen=True)
class AcceleratorNodePoolArgs:
    project: str
    cluster: pulumi.Input[str]
    location: str
    pool_name: str
    shape: NodeShape
    zones: Sequence[str]
    tier: Tier
    min_nodes: int
    max_nodes: int
    disk_size_gb: int
    node_service_account: pulumi.Input[str]
    max_run_seconds: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.zones:
            raise ValueError("AcceleratorNodePoolArgs.zones: at least one zone")
        if not 0 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"AcceleratorNodePoolArgs: need 0 <= min_nodes ({self.min_nodes}) <= max_nodes")
        if self.max_run_seconds is not None and self.tier is not Tier.FLEX_START:
            raise ValueError("AcceleratorNodePoolArgs.max_run_seconds applies only to flex-start")


class AcceleratorNodePool(pulumi.ComponentResource):
    """Owns: the node pool. The cluster autoscaler adds a node when a vLLM pod is Pending for want of one."""

    name: pulumi.Output[str]

    def __init__(self, name: str, args: AcceleratorNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.GKE_NODE_POOL, name, None, opts)
        container = gcp.container
        shape = args.shape
        accelerators = None
        if not shape.is_tpu:
            accelerators = [
                container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=shape.gke_accelerator,
                    count=shape.accelerators,
                    gpu_driver_installation_config=container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                        gpu_driver_version="LATEST"
                    ),
                )
            ]
        flex = args.tier is Tier.FLEX_START
        pool = container.NodePool(
            f"{name}-pool",
            name=args.pool_name,
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            node_locations=list(args.zones),
            initial_node_count=args.min_nodes,
            autoscaling=container.NodePoolAutoscalingArgs(
                total_min_node_count=args.min_nodes,
                total_max_node_count=args.max_nodes,
                # Any zone with capacity: what spot and flex-start nodes need to be found at all.
                location_policy="ANY",
            ),
            management=container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=container.NodePoolNodeConfigArgs(
                machine_type=shape.machine_type,
                disk_size_gb=args.disk_size_gb,
                guest_accelerators=accelerators,
                spot=args.tier is Tier.SPOT,
                flex_start=flex or None,
                max_run_duration=f"{args.max_run_seconds}s" if args.max_run_seconds is not None else None,
                reservation_affinity=(
                    container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
                    if flex
                    else None
                ),
                service_account=args.node_service_account,
                oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
                workload_metadata_config=container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
                resource_labels=dict(args.labels),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.name = pool.name
        self.register_outputs({"name": self.name})
