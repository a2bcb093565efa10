"""The accelerator node pool of a fleet: one machine shape, autoscaled from min (0) to max nodes.

Why a component: spot, flex-start and on-demand nodes differ in a few flags that are easy to get half
right (flex-start needs autoscaling and no reservation; a GPU pool needs its driver installed; a TPU pool
is selected by its topology). Owns: the node pool and the nodes' own identity's grants.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from components.wire import container, gcp
from serving.naming import TypeToken
from serving.shapes import ResolvedShape

if TYPE_CHECKING:
    from pulumi_gcp.container._inputs import NodePoolNodeConfigShieldedInstanceConfigArgsDict

# What GKE nodes need, and no more: "Kubernetes Engine Default Node Service Account", the role GKE's
# "Configure GKE node service accounts" page names as the minimum for a custom node account (logs,
# metrics, resource metadata, the HPA's performance profile), in place of the four roles its older hardening
# guide listed. Image pulls are granted by the mirror on its own repository only (artifactregistry.reader
# there, not on the project). Pods act as their own Workload Identity accounts, never as this one.
NODE_ROLES = ("roles/container.defaultNodeServiceAccount",)
# Access scopes are the legacy control; with a least-privilege account GKE's guide leaves cloud-platform
# (IAM decides) rather than narrower scopes that break node components.
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Shielded VMs for every node: secure boot (only signed boot components) and integrity monitoring.
SHIELDED: NodePoolNodeConfigShieldedInstanceConfigArgsDict = {
    "enable_secure_boot": True,
    "enable_integrity_monitoring": True,
}


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
    shape: ResolvedShape
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
        shape = args.shape
        accelerators = None
        if not shape.is_tpu:
            accelerators = [
                container.guest_accelerator(
                    type=shape.gke_accelerator,
                    count=shape.chips,
                    gpu_driver_installation_config=container.gpu_driver_installation_config(
                        gpu_driver_version="LATEST"
                    ),
                )
            ]
        flex = args.tier is Tier.FLEX_START
        pool = gcp.NodePool(
            f"{name}-pool",
            name=args.pool_name,
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            node_locations=list(args.zones),
            initial_node_count=args.min_nodes,
            autoscaling=container.autoscaling(
                total_min_node_count=args.min_nodes,
                total_max_node_count=args.max_nodes,
                # Any zone with capacity: what spot and flex-start nodes need to be found at all.
                location_policy="ANY",
            ),
            management=container.management(auto_repair=True, auto_upgrade=True),
            node_config=container.node_config(
                machine_type=shape.name,
                disk_size_gb=args.disk_size_gb,
                guest_accelerators=accelerators,
                spot=args.tier is Tier.SPOT,
                flex_start=flex or None,
                max_run_duration=f"{args.max_run_seconds}s" if args.max_run_seconds is not None else None,
                reservation_affinity=(
                    container.reservation_affinity(consume_reservation_type="NO_RESERVATION") if flex else None
                ),
                service_account=args.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                shielded_instance_config=container.shielded_instance_config(**SHIELDED),
                workload_metadata_config=container.workload_metadata_config(mode="GKE_METADATA"),
                resource_labels=dict(args.labels),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.name = pool.name
        self.register_outputs({"name": self.name})
