"""A stack served by Cloud Run with one GPU per instance (a `cloudRun` block): its checks and what it derives.

Why a module of its own: what differs on Cloud Run (its instance bounds, concurrency, the sidecar split, the
bench job) is decided by this variant alone; the union in stacks/settings.py picks it by the accelerator.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import field_validator, model_validator

from serving.cloud_run_containers import split_problem
from serving.cloud_run_rules import concurrency_problem, gpu_sizing_problems, region_problem, request_concurrency
from serving.cold_start import ColdStartEstimate, StreamerSizing
from serving.pricing import CloudRunBilling
from serving.route_guard import GuardConfig
from serving.shapes import Accelerator, ResolvedShape, resolved_shapes, the_cloud_run_shape
from stacks.apis import BASE_APIS
from stacks.bench import BenchSettings
from stacks.capacity import PlatformCapacity, cloud_run_capacity
from stacks.cloud_run import CloudRunSettings
from stacks.cloud_run_limits import gpu_service_problems, quota_warning
from stacks.image_family import CUDA_BUILD, ImageBuild
from stacks.load_plan import (
    checkpoint_bytes,
    cold_start_estimate,
    derived_load_seconds,
    load_problems,
    loader_args,
    streamer_sizing,
)
from stacks.model_load import StreamLoad
from stacks.stack_base import TPU_STACK, StackBase, offered_on, refuse_foreign_block, require_block


class CloudRunStack(StackBase):
    """A stack served by Cloud Run with one GPU per instance (accelerator nvidia-l4 or nvidia-rtx-pro-6000)."""

    # The `platform` stack output (serving.outputs) this stack exports.
    PLATFORM: ClassVar[str] = "cloud-run"
    IMAGE_BUILD: ClassVar[ImageBuild] = CUDA_BUILD

    # An accelerator a Cloud Run shape of the table rents.
    accelerator: Accelerator
    cloud_run: CloudRunSettings
    # The optional load-generator job beside the service (stacks/bench.py); absent: none.
    bench: BenchSettings | None = None

    @field_validator("accelerator")
    @classmethod
    def _a_cloud_run_gpu(cls, accelerator: Accelerator) -> Accelerator:
        return offered_on("cloud-run", accelerator)

    @model_validator(mode="before")
    @classmethod
    def _cloud_run_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        refuse_foreign_block(data, "tpu", f"tpu: only a {TPU_STACK} stack takes a tpu block; remove it")
        accelerator = data.get("accelerator") if isinstance(data, dict) else None
        found = resolved_shapes(platform="cloud-run", accelerator=accelerator) if isinstance(accelerator, str) else []
        name = found[0].display_name if found else "Cloud Run GPU"
        require_block(data, "cloudRun", f"cloudRun: a {name} stack needs a cloudRun block (cpu, memoryGib, ...)")
        return data

    @model_validator(mode="after")
    def _fits_cloud_run(self) -> Self:
        shape, run = self.shape, self.cloud_run
        problems = [
            region_problem(shape, self.region, key="region"),
            *gpu_sizing_problems(
                shape, cpu=run.cpu, memory_gib=run.memory_gib, cpu_key="cloudRun.cpu", memory_key="cloudRun.memoryGib"
            ),
        ]
        if run.concurrency is not None:
            problems.append(
                concurrency_problem(
                    concurrency=run.concurrency, max_num_seqs=self.vllm.max_num_seqs, key="cloudRun.concurrency"
                )
            )
        problems += gpu_service_problems(
            shape, run, max_num_seqs=self.vllm.max_num_seqs, prefix="cloudRun.", seqs_key="vllm.maxNumSeqs"
        )
        if not any(p and p.startswith(("cloudRun.cpu", "cloudRun.memoryGib")) for p in problems):
            # Only a size inside Cloud Run's bounds is worth splitting between the containers.
            problems.append(
                split_problem(
                    shape,
                    cpu=run.cpu,
                    memory_gib=run.memory_gib,
                    with_sidecar=self.monitoring.enabled,
                    cpu_key="cloudRun.cpu",
                    memory_key="cloudRun.memoryGib",
                )
            )
        problems += load_problems(
            self.model.load,
            bucket_name=self.bucket.name,
            load_format=self.vllm.load_format,
            extra_args=self.vllm.extra_args,
            run=run,
        )
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))
        if self.vllm.tensor_parallel_size != 1:
            raise ValueError("vllm.tensorParallelSize: Cloud Run attaches exactly one GPU per instance; allowed: 1")
        return self

    @property
    def shape(self) -> ResolvedShape:
        """The Cloud Run shape the accelerator names (one per GPU): its minimum, maximum, regions and selector."""
        return the_cloud_run_shape(self.accelerator)

    def _adapter_platform_problem(self) -> str | None:
        if isinstance(self.model.load, StreamLoad):
            return (
                "adapters: vLLM's resolver loads adapters from a folder, and model.load: stream mounts no bucket; "
                "serve adapters with model.load: fuse"
            )
        return None

    @property
    def import_image(self) -> str:
        """The import job's base image: the serving image (the CUDA vLLM image carries its clients)."""
        return self.model_import.image or self.image_ref

    @property
    def apis(self) -> tuple[str, ...]:
        return tuple(sorted({*BASE_APIS, *self.monitoring.apis}))

    @property
    def zone(self) -> str | None:
        """Cloud Run picks zones itself: none to name."""
        return None

    @property
    def port(self) -> int:
        return self.cloud_run.port

    def guard_config(self) -> GuardConfig:
        """Cloud Run: IAM checks every caller at Google's front end and vLLM holds no key; the collector sidecar
        scrapes over loopback."""
        return GuardConfig(
            names=self.answered_names(), key="none", adapters_dir=self.adapters_dir, versioned=bool(self.adapters)
        )

    @property
    def model_root(self) -> str:
        """Where vLLM finds the checkpoints: the FUSE mount, or gs://<bucket> when it streams them."""
        if isinstance(self.model.load, StreamLoad):
            return f"gs://{self.bucket.name}"
        return self.cloud_run.mount.mount_path

    @property
    def streams_weights(self) -> bool:
        return isinstance(self.model.load, StreamLoad)

    @property
    def streamer(self) -> StreamerSizing | None:
        """The Run:ai Model Streamer's threads and CPU buffer (stream mode only)."""
        load = self.model.load
        if not isinstance(load, StreamLoad):
            return None
        sizing = streamer_sizing(load, self.cloud_run)
        return sizing if isinstance(sizing, StreamerSizing) else None

    def cold_start_estimate(self) -> ColdStartEstimate | None:
        """The estimated cold start (engine, weights at the mode's throughput, compile); None if the size is unknown."""
        size = checkpoint_bytes(self.model_dirs, override=self.capacity.weight_bytes)
        return cold_start_estimate(self.model.load, size)

    @property
    def startup_load_seconds(self) -> int:
        """The startup probe's window: cloudRun.modelLoadSeconds, else derived from the estimate."""
        return self.cloud_run.load_seconds(derived_load_seconds(self.cold_start_estimate(), self.cloud_run))

    @property
    def concurrency(self) -> int:
        """Per-instance concurrency: never below what vLLM batches."""
        return request_concurrency(self.cloud_run.concurrency, max_num_seqs=self.vllm.max_num_seqs)

    def serve_args(self) -> list[str]:
        """The container's `vllm serve` arguments (with the streamer's flags in stream mode)."""
        args = self._vllm_serve_args(port=self.port, model_root=self.model_root)
        return args + loader_args(self.model.load, self.cloud_run)

    def capacity_platform(self) -> PlatformCapacity:
        return cloud_run_capacity(self.shape, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """Quota a new project lacks for this stack (a Cloud Run GPU quota beyond a first request)."""
        warning = quota_warning(self.shape, self.cloud_run)
        return [warning] if warning else []

    def billing(self) -> CloudRunBilling:
        """What one instance bills (GPU, CPU, memory, zonal redundancy) and how many run: the `billing` output."""
        run = self.cloud_run
        return CloudRunBilling(
            accelerator=self.accelerator,
            region=self.region,
            cpu=run.cpu,
            memory_gib=run.memory_gib,
            gpu_zonal_redundancy=not run.gpu_zonal_redundancy_disabled,
            min_instances=run.min_instances,
            max_instances=run.max_instances,
        )
