"""The rules a GKE stack must meet across its blocks: the node shape against the accelerator, vLLM's
tensor parallel, the model's weights and the stack's region.

Why apart from stacks/gke.py: these read the top-level keys too (accelerator, region, vllm, model), which
the `gke` block alone cannot see; each message names the key to change and what is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from serving.gke_machines import ACCELERATOR_ZONES, NODE_SHAPES, shapes_for
from serving.model_profiles import builtin_profile, builtin_profile_names, find_builtin_profile
from serving.planner import GIB

if TYPE_CHECKING:
    from stacks.settings import GkeStack

# Loading a checkpoint passes through host memory (safetensors are read, then copied to the accelerators;
# on TPU the weights are staged in CPU RAM before sharding). The pod must hold the whole checkpoint at once.
HOST_COPIES_WHILE_LOADING = 1


def gke_stack_problems(stack: GkeStack) -> list[str]:
    """Every way the stack's fleet cannot work as written, each naming its key."""
    pool = stack.gke.node_pool
    shape = pool.shape
    problems: list[str] = []
    if shape.accelerator is not stack.accelerator:
        problems.append(
            f"gke.nodePool.machineType {shape.machine_type} carries {shape.accelerator.value}, but accelerator is "
            f"{stack.accelerator.value}; allowed: {', '.join(shapes_for(stack.accelerator))}"
        )
        return problems
    tensor_parallel = stack.vllm.tensor_parallel_size
    if tensor_parallel != shape.accelerators:
        matching = shapes_for(stack.accelerator, accelerators=tensor_parallel)
        problems.append(
            f"vllm.tensorParallelSize {tensor_parallel}: one replica per node serves over all "
            f"{shape.accelerators} accelerator(s) of {shape.machine_type}; set it to {shape.accelerators} or pick a "
            + (
                f"machine type with {tensor_parallel} ({', '.join(matching)})"
                if matching
                else f"tensor parallel size a machine type has ({_counts(stack)})"
            )
        )
    offered = ACCELERATOR_ZONES[stack.accelerator]
    problems += [
        f"gke.nodePool.zones: {zone} does not offer {stack.accelerator.value}; allowed: {', '.join(offered)} "
        "(serving/gke_machines.py)"
        for zone in pool.zones
        if zone not in offered
    ]
    if pool.region != stack.region:
        problems.append(
            f"region: {stack.region!r} must be the region of gke.nodePool.zones ({pool.region}), where the model "
            "bucket and the image mirror live"
        )
    weights = _weight_bytes(stack)
    if weights is not None and weights * HOST_COPIES_WHILE_LOADING > stack.gke.pod_memory_gib * GIB:
        problems.append(
            f"gke.memoryGib: the checkpoint's {weights / GIB:.1f} GiB of weights pass through host memory while "
            f"loading, more than the pod's {stack.gke.pod_memory_gib:g} GiB (a {shape.machine_type} node can "
            f"allocate {shape.allocatable_memory_gib:.1f} GiB); raise gke.memoryGib or pick a larger machine type"
        )
    return problems


def _counts(stack: GkeStack) -> str:
    """Accelerators per node of the machine types that carry the stack's accelerator, e.g. `1, 2, 4, 8`."""
    counts = sorted({NODE_SHAPES[name].accelerators for name in shapes_for(stack.accelerator)})
    return ", ".join(str(count) for count in counts)


def _weight_bytes(stack: GkeStack) -> int | None:
    """The checkpoint's weight bytes from the model catalog (serving/catalog, whose variants are the planner's
    built-in profiles) or capacity.weightBytes; None when neither knows it (the capacity section says so)."""
    reference = stack.capacity.profile
    if reference is not None and reference in builtin_profile_names():
        return builtin_profile(reference).weight_bytes
    if reference is None:
        profile = find_builtin_profile(stack.model.path)
        return profile.weight_bytes if profile is not None else None
    return stack.capacity.weight_bytes
