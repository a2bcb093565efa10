"""GKE node shapes a fleet can run on: machine type, accelerators per node, host memory, where offered.

Why a table apart from the settings: the stack schema (stacks/gke.py) checks machine type against
accelerator type and count, tensor parallel against accelerators per node and the weights against the
node's memory from these rows; the node pool (components/gke) and the pod's node selector read the same
rows, so a fact Google changes is edited here once, with its source.

The rows come from the shapes table (serving/data/shapes.json), where each machine series' host figures,
zones, quota metrics and labels carry their source and whether they were confirmed; this module gives the
settings and components the typed view (NodeShape) and GKE's allocatable arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.shapes import Accelerator, Shape, gke_zones, machine_family, shapes

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


def _node_shape(entry: Shape) -> NodeShape:
    family = machine_family(entry)
    assert entry.host_vcpu is not None  # GKE rows state their host
    assert entry.host_memory_gib is not None
    return NodeShape(
        machine_type=entry.name,
        accelerator=Accelerator(entry.accelerator),
        accelerators=entry.accelerators,
        vcpu=entry.host_vcpu,
        memory_gib=entry.host_memory_gib,
        gke_accelerator=family.gke_accelerator,
        tpu_topology=entry.topology,
        confirmed=family.host_source.confirmed,
    )


# Every GKE machine type of the shapes table whose accelerator a stack can name.
NODE_SHAPES: dict[str, NodeShape] = {
    entry.name: _node_shape(entry) for entry in shapes(platform="gke") if entry.accelerator in set(Accelerator.every())
}

# Where GKE can place each accelerator: the union of its machine series' zones (serving/data/shapes.json,
# each list with its source; `verify preflight` asks Compute Engine for the real list before a rollout).
ACCELERATOR_ZONES: dict[Accelerator, tuple[str, ...]] = {
    accelerator: zones for accelerator in Accelerator.every() if (zones := gke_zones(accelerator))
}

# The Kubernetes minor versions whose OpenAPI schema the tests validate every manifest against (the
# `kubernetes-validate` package ships them); a stack pins one of these as gke.cluster.kubernetesVersion.
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.34", "1.35")

# GKE Standard's cluster management fee per cluster-hour (https://cloud.google.com/kubernetes-engine/pricing;
# the monthly free tier credit covers one zonal or Autopilot cluster per billing account, not counted here).
CLUSTER_FEE_USD_PER_HOUR = 0.10


def shapes_for(accelerator: Accelerator, *, accelerators: int | None = None) -> list[str]:
    """The machine types that carry an accelerator (with exactly `accelerators` of it, when given), for
    error messages: a hint must name only machine types that would satisfy it."""
    return [
        name
        for name, shape in NODE_SHAPES.items()
        if shape.accelerator is accelerator and (accelerators is None or shape.accelerators == accelerators)
    ]
