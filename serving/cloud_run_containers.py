"""How a Cloud Run GPU instance is shared between vLLM's container and the metrics sidecar.

Why a module of its own: Google documents three rules that meet here, and a split that satisfies one can
break another (issue 35: an L4 vLLM container of 7 CPU, an RTX PRO 6000 one of 19 CPU / 79.5 GiB):

1. The CPU values one container may take. pulumi_gcp 10.2's `ServiceTemplateContainerResourcesArgs.limits`
   (generated from the Cloud Run v2 API reference): "The only supported values for CPU are '1', '2', '4',
   '6', and '8'", and https://cloud.google.com/run/docs/configuring/services/cpu ("Values greater than 1
   must be integer values" up to 8; below 1 only with request-based billing, which a GPU service cannot use).
   The GPU page states the one exception: an RTX PRO 6000 instance takes "a minimum of 20 CPU and 80 GiB".
2. The memory a container's CPU allows (the same CPU page's table, read 2026-11): 1 vCPU up to 4 GiB, 2 up
   to 8, 4 from 2 to 16, 6 from 4 to 24, 8 from 4 to 32; a second-generation container takes at least
   512 MiB (https://cloud.google.com/run/docs/configuring/services/memory-limits).
3. The GPU's minimum (https://cloud.google.com/run/docs/configuring/services/gpu: "For L4 GPUs, you must
   use a minimum of 4 CPU and 16 GiB of memory", RTX PRO 6000 20 CPU / 80 GiB; "If you use sidecar
   containers, note that the GPU can only be attached to one container"). The page does not say whether
   the minimum applies to the instance's total or to the container that holds the GPU, and no Google
   sample read (2026-11: the GPU page, the Ollama/Gemma GPU tutorials, GoogleCloudPlatform/run-gmp-sidecar's
   run-service.yaml) sizes a GPU container beside a sidecar. So the split gives the GPU container the whole
   minimum by itself: both readings hold.

The stack file's `cloudRun.cpu` / `memoryGib` stay the instance's size (the bill); the split decides which
container gets what, and a size no split can satisfy is refused with the key and the smallest size that works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from serving.shapes import ResolvedShape

# Rule 1: pulumi_gcp's ServiceTemplateContainerResourcesArgs.limits docstring (tests/provider_rules reads it
# from the installed package and fails if these drift apart).
CONTAINER_CPU_VALUES = (1, 2, 4, 6, 8)
# Rule 2: the most memory (MiB) a container of that many CPUs may have, and the least any container may have.
MAX_MEMORY_MIB_PER_CPU = {1: 4 * 1024, 2: 8 * 1024, 4: 16 * 1024, 6: 24 * 1024, 8: 32 * 1024}
MIN_MEMORY_MIB_PER_CPU = {1: 512, 2: 512, 4: 2 * 1024, 6: 4 * 1024, 8: 4 * 1024}
SOURCES = (
    "pulumi_gcp cloudrunv2 ServiceTemplateContainerResourcesArgs.limits (CPU values '1', '2', '4', '6', '8')",
    "https://cloud.google.com/run/docs/configuring/services/cpu (memory each CPU value allows)",
    "https://cloud.google.com/run/docs/configuring/services/gpu (the GPU's minimum, whole, on the GPU container)",
)
# The sidecar's own floor: the smallest second-generation container (512 MiB), 1 CPU (a GPU service is
# instance-billed, so a fraction of a CPU is not allowed).
SIDECAR_MIN_MEMORY_MIB = 512


@dataclass(frozen=True)
class ContainerSize:
    cpu: int
    memory_mib: int

    def limits(self) -> dict[str, str]:
        memory = f"{self.memory_mib // 1024}Gi" if self.memory_mib % 1024 == 0 else f"{self.memory_mib}Mi"
        return {"cpu": str(self.cpu), "memory": memory}


@dataclass(frozen=True)
class InstanceSplit:
    """vLLM's container (it holds the GPU) and the sidecar's (None when the stack runs no sidecar)."""

    vllm: ContainerSize
    sidecar: ContainerSize | None


def gpu_container_cpu_allowed(shape: ResolvedShape, cpu: int) -> bool:
    """A CPU value the GPU's container may take: the general list, or at least the GPU's minimum where that
    minimum is itself beyond the list (RTX PRO 6000: 20, the GPU page's stated exception)."""
    if shape.host_vcpu > max(CONTAINER_CPU_VALUES):
        return cpu >= shape.host_vcpu
    return cpu in CONTAINER_CPU_VALUES and cpu >= shape.host_vcpu


def _gpu_container_max_memory_mib(cpu: int, instance_mib: int) -> int:
    if cpu in MAX_MEMORY_MIB_PER_CPU:
        return MAX_MEMORY_MIB_PER_CPU[cpu]
    # The exception (rule 1) states only a minimum; the instance itself is the bound.
    return instance_mib


def split_instance(shape: ResolvedShape, *, cpu: int, memory_gib: int, with_sidecar: bool) -> InstanceSplit | None:
    """The split of a `cpu` x `memory_gib` instance that obeys rules 1-3, or None when none does.

    vLLM gets the most it can: the sidecar takes the smallest allowed CPU value that leaves vLLM an allowed
    one, and the memory vLLM's CPU value cannot hold.
    """
    instance_mib = memory_gib * 1024
    if not with_sidecar:
        vllm = ContainerSize(cpu, instance_mib)
        return InstanceSplit(vllm, None) if _gpu_container_fits(shape, vllm, instance_mib) else None
    for sidecar_cpu in CONTAINER_CPU_VALUES:
        vllm_cpu = cpu - sidecar_cpu
        if not gpu_container_cpu_allowed(shape, vllm_cpu):
            continue
        ceiling = _gpu_container_max_memory_mib(vllm_cpu, instance_mib)
        # Whole GiB for vLLM (the sidecar gets the rest, at least its floor): limits that read plainly.
        vllm = ContainerSize(vllm_cpu, min((instance_mib - SIDECAR_MIN_MEMORY_MIB) // 1024 * 1024, ceiling))
        sidecar = ContainerSize(sidecar_cpu, instance_mib - vllm.memory_mib)
        if _gpu_container_fits(shape, vllm, instance_mib) and _sidecar_fits(sidecar):
            return InstanceSplit(vllm, sidecar)
    return None


def _gpu_container_fits(shape: ResolvedShape, size: ContainerSize, instance_mib: int) -> bool:
    if not gpu_container_cpu_allowed(shape, size.cpu) or size.memory_mib < shape.host_memory_gib * 1024:
        return False
    floor = MIN_MEMORY_MIB_PER_CPU.get(size.cpu, 0)
    return floor <= size.memory_mib <= _gpu_container_max_memory_mib(size.cpu, instance_mib)


def _sidecar_fits(size: ContainerSize) -> bool:
    return (
        size.cpu in CONTAINER_CPU_VALUES
        and max(SIDECAR_MIN_MEMORY_MIB, MIN_MEMORY_MIB_PER_CPU[size.cpu])
        <= size.memory_mib
        <= MAX_MEMORY_MIB_PER_CPU[size.cpu]
    )


def split_problem(
    shape: ResolvedShape, *, cpu: int, memory_gib: int, with_sidecar: bool, cpu_key: str, memory_key: str
) -> str | None:
    """Why no split of this instance obeys Google's rules, naming the keys and a size that works."""
    if split_instance(shape, cpu=cpu, memory_gib=memory_gib, with_sidecar=with_sidecar) is not None:
        return None
    if with_sidecar:
        what = (
            f"vLLM's container (it holds the {shape.display_name}) and the metrics sidecar each need an allowed "
            f"CPU value (1, 2, 4, 6 or 8{_exception(shape)}) and the memory that value allows, and vLLM's alone "
            f"must have the GPU's minimum of {shape.host_vcpu} CPU / {shape.host_memory_gib:g} GiB"
        )
    else:
        what = (
            f"vLLM's container takes the whole instance and needs an allowed CPU value (1, 2, 4, 6 or 8"
            f"{_exception(shape)}) with the memory that value allows"
        )
    return (
        f"{cpu_key}/{memory_key}: {cpu} CPU / {memory_gib} GiB cannot be shared the way Cloud Run allows: {what}; "
        f"allowed e.g. {_smallest_working(shape, with_sidecar)} (sources: {'; '.join(SOURCES)})"
    )


def _exception(shape: ResolvedShape) -> str:
    if shape.host_vcpu > max(CONTAINER_CPU_VALUES):
        return f", or {shape.host_vcpu} and more for the {shape.display_name}"
    return ""


def _smallest_working(shape: ResolvedShape, with_sidecar: bool) -> str:
    least_memory = math.ceil(shape.host_memory_gib)
    for cpu in range(shape.host_vcpu, shape.host_vcpu + 9):
        for memory_gib in range(least_memory, least_memory + 33):
            if split_instance(shape, cpu=cpu, memory_gib=memory_gib, with_sidecar=with_sidecar) is not None:
                return f"cpu {cpu}, memoryGib {memory_gib}"
    return "a larger instance"  # pragma: no cover - every shipped GPU has a working size
