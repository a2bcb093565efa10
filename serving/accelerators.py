"""Typed views of the shapes table's TPU chips, kept while readers move to serving.shapes.ResolvedShape.

Why still here: TPU readers took these views before a shape was resolved once; each view is deleted as its
readers carry the resolved shape instead (Cloud Run's and GKE's GPU views already are). `Accelerator`, the
validated name, lives in serving/shapes.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.shapes import Accelerator, AcceleratorFacts, accelerator_facts


@dataclass(frozen=True)
class TpuChip:
    """A TPU generation served through a queued resource."""

    accelerator: Accelerator
    display_name: str
    hbm_gib_per_chip: float
    # The TPU VM runtime image; None for a TPU sold through GKE only (a node pool boots GKE's own image). The
    # table's validator requires it of every TPU a TPU VM shape rents.
    runtime_version: str | None
    # Per chip: peak dense bf16 FLOP/s and memory bandwidth (prices: serving/pricing.py, by provisioning model).
    peak_dense_bf16_flops: float | None = None
    memory_bandwidth: float | None = None

    @property
    def tpu_vm_runtime(self) -> str:
        """The runtime a TPU VM of this chip boots; a TPU with none is sold through GKE only, so a TPU VM
        stack naming it is refused here rather than sent to the queued-resource API without a runtime."""
        if self.runtime_version is None:
            raise ValueError(f"{self.display_name} has no TPU VM runtime: it is served on GKE only")
        return self.runtime_version


def _tpu(accelerator: Accelerator, facts: AcceleratorFacts) -> TpuChip:
    return TpuChip(
        accelerator=accelerator,
        display_name=facts.display_name,
        hbm_gib_per_chip=facts.memory_gib,
        runtime_version=None if facts.runtime_version is None else facts.runtime_version.value,
        peak_dense_bf16_flops=facts.peak_dense_bf16_flops,
        memory_bandwidth=facts.memory_bandwidth,
    )


# TPU generations, from the shapes table.
TPU_CHIPS: dict[Accelerator, TpuChip] = {
    accelerator: _tpu(accelerator, facts)
    for accelerator in Accelerator.every()
    if (facts := accelerator_facts(accelerator)).family == "tpu"
}
