"""What GKE makes of a machine type: the resource its pods request, the labels its nodes carry, and what a
node leaves its pods (allocatable CPU and memory); plus the Kubernetes versions and the cluster fee.

Why apart from the shapes table: the machine types themselves are data (serving/data/shapes.json, read once
into a `ResolvedShape` by serving/shapes.py); what GKE reserves on a node and how a pod names an accelerator
are GKE's rules, the same for every machine type, so they are functions of the resolved shape. The settings
(stacks/gke.py, stacks/gke_rules.py), the node pool and the manifests (components/gke) call them.
"""

from __future__ import annotations

from serving.shapes import ResolvedShape

# The node label and pod resource GKE uses per accelerator family.
GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"

# The Kubernetes minor versions whose OpenAPI schema the tests validate every manifest against (the
# `kubernetes-validate` package ships them); a stack pins one of these as gke.cluster.kubernetesVersion.
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.34", "1.35")

# GKE Standard's cluster management fee per cluster-hour (https://cloud.google.com/kubernetes-engine/pricing;
# the monthly free tier credit covers one zonal or Autopilot cluster per billing account, not counted here).
CLUSTER_FEE_USD_PER_HOUR = 0.10


def pod_resource(shape: ResolvedShape) -> str:
    """The extended resource a pod requests for the node's accelerators (and the taint it tolerates)."""
    return TPU_RESOURCE if shape.is_tpu else GPU_RESOURCE


def node_labels(shape: ResolvedShape) -> dict[str, str]:
    """Labels GKE puts on the machine type's nodes, which the vLLM pods select: a TPU slice by its
    accelerator and topology, a GPU machine by its accelerator."""
    if shape.topology is not None:
        return {TPU_ACCELERATOR_LABEL: shape.gke_accelerator, TPU_TOPOLOGY_LABEL: shape.topology}
    return {GPU_ACCELERATOR_LABEL: shape.gke_accelerator}


def allocatable_memory_gib(shape: ResolvedShape) -> float:
    """Memory a pod can request on one of the machine type's nodes, GiB (GKE's formula: the shape's own
    `allocatable_memory_gib`)."""
    return shape.allocatable_memory_gib


def allocatable_vcpu(shape: ResolvedShape) -> float:
    """CPU a pod can request: GKE keeps 6% of the first core, 1% of the next, 0.5% of two more, 0.25% above."""
    cores, reserved = float(shape.host_vcpu), 0.0
    for size, share in ((1, 0.06), (1, 0.01), (2, 0.005)):
        step = min(cores, size)
        reserved += step * share
        cores -= step
    reserved += max(cores, 0) * 0.0025
    return shape.host_vcpu - reserved
