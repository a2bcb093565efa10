"""GKE node shapes a fleet can run on: machine type, accelerators per node, host memory, where offered.

Why a table apart from the settings: the stack schema (stacks/gke.py) checks machine type against
accelerator type and count, tensor parallel against accelerators per node and the weights against the
node's memory from these rows; the node pool (components/gke) and the pod's node selector read the same
rows, so a fact Google changes is edited here once, with its source.

Sources (read 2026-11, from the project's reference notes and Google's pages named per row):
- G2 (NVIDIA L4): https://cloud.google.com/compute/docs/accelerator-optimized-machines#g2-vms, the fixed
  GPU count, vCPUs and memory of each g2-standard-* type.
- ct6e (TPU v6e): https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus (single-host v6e
  machine types ct6e-standard-1t/4t/8t, topologies 1x1, 2x2, 2x4) and https://cloud.google.com/tpu/docs/v6e
  (44 vCPU / 448 GB for one chip, 180 vCPU / 720 GB for four, 180 vCPU / 1440 GB for eight).
- The ct6e host figures were read from the v6e page's table as quoted in public GKE samples, not from a
  second copy: treat them as UNCONFIRMED until re-read (they only bound the weights-vs-host-memory check).
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.accelerators import Accelerator
from serving.tpu_offers import V6E_ZONES

# The node label and pod resource GKE uses per accelerator family.
GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"


@dataclass(frozen=True)
class NodeShape:
    """One machine type: its accelerators, its host, and the labels its nodes carry."""

    machine_type: str
    accelerator: Accelerator
    accelerators: int
    vcpu: int
    memory_gib: float
    # GKE's accelerator name on the node (nvidia-l4 / tpu-v6e-slice) and, for TPU, the slice topology.
    gke_accelerator: str
    tpu_topology: str | None = None
    # False where the figures above were not confirmed against a second copy of Google's table.
    confirmed: bool = True

    @property
    def is_tpu(self) -> bool:
        return self.tpu_topology is not None

    @property
    def resource(self) -> str:
        """The extended resource a pod requests for this node's accelerators."""
        return TPU_RESOURCE if self.is_tpu else GPU_RESOURCE

    def node_selector(self) -> dict[str, str]:
        """Labels GKE puts on these nodes, which the vLLM pods select."""
        if self.tpu_topology is not None:
            return {TPU_ACCELERATOR_LABEL: self.gke_accelerator, TPU_TOPOLOGY_LABEL: self.tpu_topology}
        return {GPU_ACCELERATOR_LABEL: self.gke_accelerator}

    # What the kubelet and system daemons keep: GKE reserves a share of memory per node (the allocatable
    # formula: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above
    # 128 GiB; https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes) plus 100 MiB for
    # eviction.
    @property
    def allocatable_memory_gib(self) -> float:
        memory, reserved = self.memory_gib, 0.0
        for size, share in ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06)):
            step = min(memory, size)
            reserved += step * share
            memory -= step
        reserved += max(memory, 0) * 0.02
        return self.memory_gib - reserved - 0.1

    @property
    def allocatable_vcpu(self) -> float:
        """CPU a pod can request: GKE keeps 6% of the first core, 1% of the next, 0.5% of two more, 0.25% above."""
        cores, reserved = float(self.vcpu), 0.0
        for size, share in ((1, 0.06), (1, 0.01), (2, 0.005)):
            step = min(cores, size)
            reserved += step * share
            cores -= step
        reserved += max(cores, 0) * 0.0025
        return self.vcpu - reserved


def _g2(name: str, gpus: int, vcpu: int, memory_gib: int) -> NodeShape:
    return NodeShape(name, Accelerator.NVIDIA_L4, gpus, vcpu, memory_gib, "nvidia-l4")


def _ct6e(name: str, chips: int, vcpu: int, memory_gib: int, topology: str) -> NodeShape:
    return NodeShape(name, Accelerator.TPU_V6E, chips, vcpu, memory_gib, "tpu-v6e-slice", topology, confirmed=False)


NODE_SHAPES: dict[str, NodeShape] = {
    shape.machine_type: shape
    for shape in (
        _g2("g2-standard-4", 1, 4, 16),
        _g2("g2-standard-8", 1, 8, 32),
        _g2("g2-standard-12", 1, 12, 48),
        _g2("g2-standard-16", 1, 16, 64),
        _g2("g2-standard-24", 2, 24, 96),
        _g2("g2-standard-32", 1, 32, 128),
        _g2("g2-standard-48", 4, 48, 192),
        _g2("g2-standard-96", 8, 96, 384),
        _ct6e("ct6e-standard-1t", 1, 44, 448, "1x1"),
        _ct6e("ct6e-standard-4t", 4, 180, 720, "2x2"),
        _ct6e("ct6e-standard-8t", 8, 180, 1440, "2x4"),
    )
}

# Zones that offer NVIDIA L4 GPUs (G2 machines), as Compute Engine's "GPU regions and zones" page lists them
# (https://cloud.google.com/compute/docs/gpus/gpu-regions-zones, L4 rows). UNCONFIRMED: written from the
# project's notes, not re-read against the page on 2026-11; `verify preflight` asks Compute Engine for the
# real list (acceleratorTypes) before a rollout. Other L4 zones exist; add them here with the page as source.
L4_ZONES: tuple[str, ...] = (
    "us-central1-a",
    "us-central1-b",
    "us-central1-c",
    "us-east1-b",
    "us-east1-c",
    "us-east1-d",
    "us-east4-a",
    "us-east4-c",
    "us-west1-a",
    "us-west1-b",
    "us-west4-a",
    "us-west4-c",
    "europe-west1-b",
    "europe-west1-c",
    "europe-west4-a",
    "europe-west4-b",
    "europe-west4-c",
    "asia-southeast1-b",
    "asia-southeast1-c",
)

# Where GKE can place each accelerator (TPU v6e on GKE: the same zones as Cloud TPU).
ACCELERATOR_ZONES: dict[Accelerator, tuple[str, ...]] = {
    Accelerator.NVIDIA_L4: L4_ZONES,
    Accelerator.TPU_V6E: V6E_ZONES,
}

# The Kubernetes minor versions whose OpenAPI schema the tests validate every manifest against (the
# `kubernetes-validate` package ships them); a stack pins one of these as gke.cluster.kubernetesVersion.
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.34", "1.35")

# GKE Standard's cluster management fee per cluster-hour (https://cloud.google.com/kubernetes-engine/pricing;
# the monthly free tier credit covers one zonal or Autopilot cluster per billing account, not counted here).
CLUSTER_FEE_USD_PER_HOUR = 0.10


def shapes_for(accelerator: Accelerator) -> list[str]:
    """The machine types that carry an accelerator, for error messages."""
    return [name for name, shape in NODE_SHAPES.items() if shape.accelerator is accelerator]
