"""Typed views of the shapes table's chips, kept while readers move to serving.shapes.ResolvedShape.

Why still here: Cloud Run, TPU and GPU readers took these views before a shape was resolved once; each view is
deleted as its readers carry the resolved shape instead. `Accelerator`, the validated name, lives in
serving/shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from serving.shapes import Accelerator, AcceleratorFacts, accelerator_facts, shapes


@dataclass(frozen=True)
class GpuChip:
    """A CUDA GPU as the planner sees it, wherever it is rented (Cloud Run or a GKE machine type)."""

    accelerator: Accelerator
    display_name: str
    memory_gib: float
    # Peak dense (no sparsity) bf16 tensor FLOP/s: the physical ceiling verify bench checks against.
    # (Prices live in serving/pricing.py: they depend on CPU, memory and zonal redundancy, not the GPU alone.)
    peak_dense_bf16_flops: float | None = None
    # Memory bandwidth (bytes/s): what bounds decode, which reads every weight once per step.
    memory_bandwidth: float | None = None


@dataclass(frozen=True)
class CloudRunGpu(GpuChip):
    """A GPU that Cloud Run attaches to a service instance (always exactly one per instance)."""

    # Cloud Run's `template.node_selector.accelerator` value.
    node_selector: str = ""
    min_cpu: int = 0
    min_memory_gib: int = 0
    regions: tuple[str, ...] = ()


@dataclass(frozen=True)
class TpuChip:
    """A TPU generation served through a queued resource."""

    accelerator: Accelerator
    display_name: str
    hbm_gib_per_chip: float
    # The TPU VM runtime image; None for a TPU sold through GKE only (a node pool boots GKE's own image). The
    # table's validator requires it of every TPU a TPU VM shape rents.
    runtime_version: str | None
    # Per chip, as for GpuChip: peak dense bf16 FLOP/s (prices: serving/pricing.py, by provisioning model).
    peak_dense_bf16_flops: float | None = None
    memory_bandwidth: float | None = None

    @property
    def tpu_vm_runtime(self) -> str:
        """The runtime a TPU VM of this chip boots; a TPU with none is sold through GKE only, so a TPU VM
        stack naming it is refused here rather than sent to the queued-resource API without a runtime."""
        if self.runtime_version is None:
            raise ValueError(f"{self.display_name} has no TPU VM runtime: it is served on GKE only")
        return self.runtime_version


def _gpu(accelerator: Accelerator, facts: AcceleratorFacts) -> GpuChip:
    return GpuChip(
        accelerator=accelerator,
        display_name=facts.display_name,
        memory_gib=facts.memory_gib,
        peak_dense_bf16_flops=facts.peak_dense_bf16_flops,
        memory_bandwidth=facts.memory_bandwidth,
    )


def _cloud_run(accelerator: Accelerator) -> CloudRunGpu | None:
    found = shapes(platform="cloud-run", accelerator=accelerator)
    if not found:
        return None
    (entry,) = found  # Cloud Run attaches one GPU of a kind: one shape per accelerator
    assert entry.where is not None  # the table requires it of every Cloud Run shape
    assert entry.host_vcpu is not None
    assert entry.host_memory_gib is not None
    chip = _gpu(accelerator, accelerator_facts(accelerator))
    return CloudRunGpu(
        **{field.name: getattr(chip, field.name) for field in fields(GpuChip)},
        node_selector=entry.node_selector["accelerator"],
        min_cpu=entry.host_vcpu,
        min_memory_gib=int(entry.host_memory_gib),
        regions=entry.where.value,
    )


def _tpu(accelerator: Accelerator, facts: AcceleratorFacts) -> TpuChip:
    return TpuChip(
        accelerator=accelerator,
        display_name=facts.display_name,
        hbm_gib_per_chip=facts.memory_gib,
        runtime_version=None if facts.runtime_version is None else facts.runtime_version.value,
        peak_dense_bf16_flops=facts.peak_dense_bf16_flops,
        memory_bandwidth=facts.memory_bandwidth,
    )


# Cloud Run GPUs, TPU generations and every GPU (Cloud Run's or a GKE machine's), from the shapes table.
CLOUD_RUN_GPUS: dict[Accelerator, CloudRunGpu] = {
    accelerator: gpu for accelerator in Accelerator.every() if (gpu := _cloud_run(accelerator)) is not None
}
TPU_CHIPS: dict[Accelerator, TpuChip] = {
    accelerator: _tpu(accelerator, facts)
    for accelerator in Accelerator.every()
    if (facts := accelerator_facts(accelerator)).family == "tpu"
}
GPU_CHIPS: dict[Accelerator, GpuChip] = {
    accelerator: CLOUD_RUN_GPUS.get(accelerator) or _gpu(accelerator, facts)
    for accelerator in Accelerator.every()
    if (facts := accelerator_facts(accelerator)).family == "gpu"
}


def facts_of(accelerator: Accelerator) -> GpuChip | TpuChip:
    """The one typed entry of an accelerator, whatever its platform (every Accelerator has exactly one)."""
    table: dict[Accelerator, GpuChip | TpuChip] = {**GPU_CHIPS, **TPU_CHIPS}
    return table[accelerator]
