"""Facts about the accelerators a stack can run on, in one table with the source of every number.

Why a table: per-accelerator minimums and defaults must not be scattered through components or
copied into stack files, where they drift from what Google enforces.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Accelerator(enum.StrEnum):
    """The accelerator a stack serves on; the value is what a stack file writes."""

    NVIDIA_L4 = "nvidia-l4"
    NVIDIA_RTX_PRO_6000 = "nvidia-rtx-pro-6000"
    TPU_V6E = "tpu-v6e"


@dataclass(frozen=True)
class CloudRunGpu:
    """A GPU that Cloud Run attaches to a service instance (always exactly one per instance)."""

    accelerator: Accelerator
    display_name: str
    # Cloud Run's `template.node_selector.accelerator` value.
    node_selector: str
    memory_gib: float
    min_cpu: int
    min_memory_gib: int
    regions: tuple[str, ...]
    # Peak dense (no sparsity) bf16 tensor FLOP/s: the physical ceiling verify bench checks against.
    # (Prices live in serving/pricing.py: they depend on CPU, memory and zonal redundancy, not the GPU alone.)
    peak_dense_bf16_flops: float | None = None
    # Memory bandwidth (bytes/s): what bounds decode, which reads every weight once per step.
    memory_bandwidth: float | None = None


@dataclass(frozen=True)
class TpuChip:
    """A TPU generation served through a queued resource."""

    accelerator: Accelerator
    display_name: str
    hbm_gib_per_chip: float
    runtime_version: str
    # Per chip, as for CloudRunGpu: peak dense bf16 FLOP/s (prices: serving/pricing.py, by provisioning model).
    peak_dense_bf16_flops: float | None = None
    memory_bandwidth: float | None = None


# Source: https://cloud.google.com/run/docs/configuring/services/gpu (GPU types, minimum CPU and
# memory per instance, regions) as gathered on 2026-11 in the project's reference notes. L4 memory:
# 24 GB (NVIDIA L4 datasheet); RTX PRO 6000 Blackwell Server Edition: 96 GB (NVIDIA datasheet).
CLOUD_RUN_GPUS: dict[Accelerator, CloudRunGpu] = {
    Accelerator.NVIDIA_L4: CloudRunGpu(
        accelerator=Accelerator.NVIDIA_L4,
        display_name="NVIDIA L4",
        node_selector="nvidia-l4",
        memory_gib=24 * 10**9 / 2**30,
        min_cpu=4,
        min_memory_gib=16,
        regions=("us-central1", "us-east4", "europe-west1", "europe-west4", "asia-southeast1"),
        # NVIDIA L4 datasheet: bf16 tensor 242 TFLOPS *with sparsity*, i.e. 121 TFLOPS dense.
        peak_dense_bf16_flops=121e12,
        # NVIDIA L4 datasheet: 300 GB/s GDDR6.
        memory_bandwidth=300e9,
    ),
    Accelerator.NVIDIA_RTX_PRO_6000: CloudRunGpu(
        accelerator=Accelerator.NVIDIA_RTX_PRO_6000,
        display_name="NVIDIA RTX PRO 6000 Blackwell",
        node_selector="nvidia-rtx-pro-6000",
        memory_gib=96 * 10**9 / 2**30,
        min_cpu=20,
        min_memory_gib=80,
        regions=("us-central1", "europe-west4", "asia-southeast1"),
        # NVIDIA RTX PRO 6000 Blackwell datasheet: 4000 AI TOPS = FP4 with sparsity; dense halves it
        # and each wider type halves again (FP4 2000 -> FP8 1000 -> bf16 500 TFLOPS dense).
        peak_dense_bf16_flops=500e12,
        # 1,792 GB/s GDDR7 (512-bit, 28 Gbps), the same on the workstation, Max-Q and server editions, as
        # reported from NVIDIA's GTC 2025 announcement (gpu.name, VideoCardz; read 2026-11-24, not the datasheet).
        memory_bandwidth=1792e9,
    ),
}

# Source: https://cloud.google.com/tpu/docs/v6e (32 GB HBM per chip; runtime v2-alpha-tpuv6e); usable HBM below.
TPU_CHIPS: dict[Accelerator, TpuChip] = {
    Accelerator.TPU_V6E: TpuChip(
        accelerator=Accelerator.TPU_V6E,
        display_name="TPU v6e (Trillium)",
        # What vLLM on TPU can use, not the datasheet's "32 GB": a real v6e-4 vLLM log reports 124.98 GiB of
        # HBM for its 4 chips (issue 26; docs/capacity-planning.md, calibration 3), 31.245 GiB a chip. The
        # datasheet figure (29.80 GiB) made the planner's KV budget 9 % lower than the log's.
        hbm_gib_per_chip=124.98 / 4,
        runtime_version="v2-alpha-tpuv6e",
        # https://cloud.google.com/tpu/docs/v6e: 918 TFLOPS peak bf16 per chip.
        peak_dense_bf16_flops=918e12,
        # https://cloud.google.com/tpu/docs/v6e: 1,640 GBps of HBM bandwidth per chip.
        memory_bandwidth=1640e9,
    ),
}


def facts_of(accelerator: Accelerator) -> CloudRunGpu | TpuChip:
    """The one table entry of an accelerator, whatever its platform (every Accelerator has exactly one)."""
    table: dict[Accelerator, CloudRunGpu | TpuChip] = {**CLOUD_RUN_GPUS, **TPU_CHIPS}
    return table[accelerator]
