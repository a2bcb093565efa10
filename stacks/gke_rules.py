"""The rules a GKE stack must meet across its blocks: the node shape against the accelerator, vLLM's
tensor parallel, the model's weights and the stack's region.

Why apart from stacks/gke.py: these read the top-level keys too (accelerator, region, vllm, model), which
the `gke` block alone cannot see; each message names the key to change and what is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from serving.gke_machines import allocatable_memory_gib, allocatable_vcpu
from serving.model_profiles import builtin_profile, builtin_profile_names, find_builtin_profile
from serving.shapes import ResolvedShape, resolved_shapes
from serving.units import GIB

if TYPE_CHECKING:
    from serving.shapes import Accelerator
    from stacks.capacity import CapacitySettings
    from stacks.gke import GkeSettings
    from stacks.model_settings import ModelSettings
    from stacks.vllm import VllmSettings


class GkeStack(Protocol):
    """The blocks of a GKE stack these rules read (the settings' GkeStack): a protocol, so the rules the
    settings call do not import the settings back (a circle)."""

    @property
    def accelerator(self) -> Accelerator: ...
    @property
    def region(self) -> str: ...
    @property
    def model(self) -> ModelSettings: ...
    @property
    def vllm(self) -> VllmSettings: ...
    @property
    def capacity(self) -> CapacitySettings: ...
    @property
    def gke(self) -> GkeSettings: ...
    @property
    def replicas_per_node(self) -> int: ...
    @property
    def pod_memory_gib(self) -> float: ...


# Loading a checkpoint passes through host memory (safetensors are read, then copied to the accelerators;
# on TPU the weights are staged in CPU RAM before sharding). The pod must hold the whole checkpoint at once.
HOST_COPIES_WHILE_LOADING = 1


def gke_stack_problems(stack: GkeStack, shape: ResolvedShape) -> list[str]:
    """Every way the stack's fleet cannot work as written, each naming its key. ``shape`` is the node pool's
    machine type, resolved once by the settings (gke.nodePool.shape)."""
    pool = stack.gke.node_pool
    problems: list[str] = []
    if shape.accelerator is not stack.accelerator:
        problems.append(
            f"gke.nodePool.machineType {shape.name} carries {shape.accelerator}, but accelerator is "
            f"{stack.accelerator}; allowed: {', '.join(_machine_types(stack.accelerator))}"
        )
        return problems
    tensor_parallel = stack.vllm.tensor_parallel_size
    divides = shape.chips % tensor_parallel == 0 and not (shape.is_tpu and tensor_parallel != shape.chips)
    if not divides:
        matching = _machine_types(shape.accelerator, chips=tensor_parallel)
        allowed = (
            f"set it to {shape.chips}"
            if shape.is_tpu
            else f"set it to {shape.chips} or a divisor of it (each replica then takes that many GPUs and "
            f"{shape.name} holds several: {', '.join(str(d) for d in _divisors(shape.chips))})"
        )
        problems.append(
            f"vllm.tensorParallelSize {tensor_parallel}: one replica per node serves over all "
            f"{shape.chips} accelerator(s) of {shape.name}; {allowed}, or pick a "
            + (
                f"machine type with {tensor_parallel} ({', '.join(matching)})"
                if matching
                else f"tensor parallel size a machine type has ({_counts(shape)})"
            )
        )
        return problems
    per_node = stack.replicas_per_node
    pool_max = stack.gke.node_pool.max_nodes
    if stack.gke.replicas.max > pool_max * per_node:
        takes = (
            f"each replica takes a whole {shape.name} node (tensor parallel over its {shape.chips} accelerator(s))"
            if per_node == 1
            else f"a {shape.name} node holds {per_node} replicas of {tensor_parallel} GPU(s)"
        )
        problems.append(
            f"gke.replicas.max {stack.gke.replicas.max} exceeds "
            + (
                f"gke.nodePool.maxNodes {pool_max}"
                if per_node == 1
                else f"{per_node} x gke.nodePool.maxNodes {pool_max}"
            )
            + f": {takes}, so the extra replicas would stay Pending"
        )
    cpu = stack.gke.cpu
    if cpu is not None and per_node > 1 and cpu * per_node > allocatable_vcpu(shape):
        problems.append(
            f"gke.cpu {cpu:g}: {per_node} replicas share a {shape.name} node, which can allocate "
            f"{allocatable_vcpu(shape):.2f} vCPU in all"
        )
    memory = stack.gke.memory_gib
    if memory is not None and per_node > 1 and memory * per_node > allocatable_memory_gib(shape):
        problems.append(
            f"gke.memoryGib {memory:g}: {per_node} replicas share a {shape.name} node, which can allocate "
            f"{allocatable_memory_gib(shape):.1f} GiB in all"
        )
    offered = shape.zones
    problems += [
        f"gke.nodePool.zones: {zone} does not offer {stack.accelerator}; allowed: {', '.join(offered)} "
        "(serving/data/shapes.json)"
        for zone in pool.zones
        if zone not in offered
    ]
    if pool.region != stack.region:
        problems.append(
            f"region: {stack.region!r} must be the region of gke.nodePool.zones ({pool.region}), where the model "
            "bucket and the image mirror live"
        )
    weights = _weight_bytes(stack)
    if weights is not None and weights * HOST_COPIES_WHILE_LOADING > stack.pod_memory_gib * GIB:
        problems.append(
            f"gke.memoryGib: the checkpoint's {weights / GIB:.1f} GiB of weights pass through host memory while "
            f"loading, more than the pod's {stack.pod_memory_gib:g} GiB (a {shape.name} node can "
            f"allocate {allocatable_memory_gib(shape):.1f} GiB); raise gke.memoryGib or pick a larger machine type"
        )
    return problems


def _divisors(count: int) -> list[int]:
    return [size for size in range(1, count + 1) if count % size == 0]


def _machine_types(accelerator: Accelerator, *, chips: int | None = None) -> list[str]:
    """The machine types that carry an accelerator (with exactly ``chips`` of it, when given), for hints: a
    hint names only machine types that would satisfy it."""
    return [
        machine.name
        for machine in resolved_shapes(platform="gke", accelerator=accelerator)
        if chips is None or machine.chips == chips
    ]


def _counts(shape: ResolvedShape) -> str:
    """Accelerators per node of the machine types that carry the shape's accelerator, e.g. `1, 2, 4, 8`."""
    counts = sorted({machine.chips for machine in resolved_shapes(platform="gke", accelerator=shape.accelerator)})
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
