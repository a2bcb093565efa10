"""A stack served by vLLM on one TPU VM node from a queued resource (a `tpu` block): its checks and what it
derives.

Why a module of its own: the node's zone and slice are checked here against the stack's own TPU generation
(the `tpu` block alone does not know it: stacks/tpu.py checks against every generation the table rents).
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import field_validator, model_validator

from serving.cold_start import tpu_stream_problem
from serving.container import MODEL_ROOT
from serving.image_digests import pinned_reference
from serving.images import CUDA_IMAGE
from serving.pricing import TpuBilling, idle_chips_problem
from serving.route_guard import GuardConfig
from serving.shapes import Accelerator, ResolvedShape, tpu_slices
from serving.vllm_args import with_tensor_parallel
from stacks.apis import BASE_APIS, TPU_APIS
from stacks.capacity import PlatformCapacity, tpu_capacity
from stacks.image_family import TPU_BUILD, ImageBuild
from stacks.model_load import FuseLoad
from stacks.placement_cost import worst_case_billing
from stacks.stack_base import TPU_STACK, StackBase, offered_on, refuse_foreign_block, require_block
from stacks.tpu import TpuSettings, tpu_zone


class TpuStack(StackBase):
    """A stack served by vLLM on one TPU node from a queued resource (a TPU slice of the shapes table)."""

    PLATFORM: ClassVar[str] = "tpu"
    IMAGE_BUILD: ClassVar[ImageBuild] = TPU_BUILD

    # An accelerator a TPU VM shape of the table rents.
    accelerator: Accelerator
    # Zone, tier and network edge of the queued-resource node.
    tpu: TpuSettings

    @field_validator("accelerator")
    @classmethod
    def _a_tpu_vm_generation(cls, accelerator: Accelerator) -> Accelerator:
        return offered_on("tpu-vm", accelerator)

    @model_validator(mode="before")
    @classmethod
    def _tpu_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        refuse_foreign_block(
            data, "cloudRun", "cloudRun: a TPU stack does not run on Cloud Run; remove the cloudRun block"
        )
        refuse_foreign_block(
            data,
            "bench",
            "bench: the load-generator job runs beside a Cloud Run service; a " + TPU_STACK + " stack has none "
            "(run `gemma-verify bench` from a machine in the TPU's region instead)",
        )
        require_block(data, "tpu", f"tpu: a {TPU_STACK} stack needs a tpu block (at least tpu.zone, e.g. us-east5-a)")
        return data

    @model_validator(mode="after")
    def _fits_the_node(self) -> Self:
        generation = self.accelerator
        slices = tpu_slices(generation)
        if self.tpu.accelerator_type not in slices:
            raise ValueError(
                f"tpu.acceleratorType {self.tpu.accelerator_type!r} is not a slice of {generation}; allowed: "
                f"{', '.join(slices)} (name the slice: the default is the smallest of the table's first TPU generation)"
            )
        shape = self.shape
        for index, placement in enumerate(self.tpu.placement_list):
            tpu_zone(f"tpu.placements[{index}].zone" if self.tpu.placements else "tpu.zone", placement.zone, shape)
        if self.region != self.tpu.region:
            raise ValueError(
                f"region: {self.region!r} must be the region of tpu.zone {self.tpu.zone!r} ({self.tpu.region}), "
                "where the model bucket should live too"
            )
        if self.vllm.tensor_parallel_size > self.tpu.chips:
            raise ValueError(
                f"vllm.tensorParallelSize {self.vllm.tensor_parallel_size} exceeds the {self.tpu.chips} chip(s) of "
                f"tpu.acceleratorType {self.tpu.accelerator_type}"
            )
        if self.vllm.tensor_parallel_size < self.tpu.chips:
            raise ValueError(idle_chips_problem(self.billing(), self.vllm.tensor_parallel_size))
        if not isinstance(self.model.load, FuseLoad):
            raise ValueError(tpu_stream_problem(self.model.path))
        if self.model.load.parallel_downloads:
            raise ValueError(
                "model.load.parallelDownloads: a TPU node copies the weights to its disk before vLLM starts; the "
                f"gcsfuse file cache is a Cloud Run mount option; remove it from a {TPU_STACK} stack"
            )
        if self.registry.build is not None:
            raise ValueError(
                "registry.build: a TPU node pulls its pinned image through the stack's Docker Hub mirror only "
                f"(its account reads that repository alone); remove registry.build from a {TPU_STACK} stack"
            )
        return self

    @property
    def accelerator_chips(self) -> int:
        return self.tpu.chips

    def _adapter_platform_problem(self) -> str | None:
        return (
            "adapters: LoRA on vllm-tpu is not confirmed for Gemma 4, and the TPU node copies the bucket to its disk "
            "once at boot, so an adapter added later would need a restart; serve adapters on a GPU stack"
        )

    @property
    def shape(self) -> ResolvedShape:
        """The slice resolved once (tpu.acceleratorType): its chip, zones and runtime, for the rules, the node
        and the planner."""
        return self.tpu.shape

    @property
    def import_image(self) -> str:
        """The import job's base image: the TPU image has no CUDA clients' twin, so the CUDA vLLM image."""
        return self.model_import.image or pinned_reference(CUDA_IMAGE)

    @property
    def apis(self) -> tuple[str, ...]:
        return tuple(sorted({*BASE_APIS, *TPU_APIS, *self.monitoring.apis}))

    @property
    def zone(self) -> str | None:
        return self.tpu.zone

    @property
    def port(self) -> int:
        return self.tpu.port

    def guard_config(self) -> GuardConfig:
        """TPU VM: the key from Secret Manager on every served route but /health; the collector beside vLLM
        (host network) reads /metrics over loopback."""
        return GuardConfig(names=self.answered_names(), key="required", scrapers="loopback")

    @property
    def model_root(self) -> str:
        # Where the node mounts the weights it copied from the bucket (Cloud Run's mount path is a setting).
        return MODEL_ROOT

    def serve_args(self) -> list[str]:
        """The container's `vllm serve` arguments, the tensor-parallel size always stated (one chip: 1)."""
        args = self._vllm_serve_args(port=self.port, model_root=self.model_root)
        return with_tensor_parallel(args, self.vllm.tensor_parallel_size)

    def capacity_platform(self) -> PlatformCapacity:
        return tpu_capacity(self.shape, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """TPU quota shows as the queued request's state (WAITING_FOR_RESOURCES); only a flex-start zone
        outside Google's published list is worth a warning before `pulumi up` (stacks/tpu.py)."""
        return self.tpu.placement_warnings()

    def billing(self) -> TpuBilling:
        """What the node bills (chips of its slice at its provisioning model's rate): the `billing` output.
        With tpu.placements, the worst case over the list (stacks/placement_cost.py)."""
        return worst_case_billing(self.tpu)
