"""One stack's complete settings: parsed once from its config, then read-only everywhere.

Why: every default that differs per accelerator and every cross-field rule (GPU minimums, regions,
Cloud Run concurrency versus vLLM's batch) is decided here, before a resource exists, so a wrong stack
file fails the preview with the key at fault rather than a rollout ten minutes later.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from stacks.accelerators import CLOUD_RUN_GPUS, TPU_CHIPS, Accelerator, CloudRunGpu
from stacks.base import SettingsModel
from stacks.bench import BenchSettings
from stacks.capacity import CapacitySettings
from stacks.checkpoint_format import quantization_problem
from stacks.cloud_run import CloudRunSettings
from stacks.cloud_run_limits import gpu_service_problems
from stacks.gpu_rules import concurrency_problem, gpu_sizing_problems, region_problem
from stacks.image_family import image_family_problem
from stacks.images import PinnedImage
from stacks.registry import RegistrySettings
from stacks.tpu import TpuSettings
from stacks.vllm import VllmSettings
from stacks.weights import ModelImportSettings, WeightSource

# The vLLM images the stacks pull unless they name another pinned one.
DEFAULT_IMAGES: dict[Accelerator, str] = {
    Accelerator.NVIDIA_L4: "vllm/vllm-openai:v0.32.0",
    Accelerator.NVIDIA_RTX_PRO_6000: "vllm/vllm-openai:v0.32.0",
    Accelerator.TPU_V6E: "vllm/vllm-tpu:v0.32.0",
}

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_OBJECT_PATH = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


def _bucket_path(value: str) -> str:
    if not _OBJECT_PATH.match(value) or ".." in value.split("/"):
        raise ValueError(f"{value!r} must be a relative object path inside the model bucket, e.g. gemma-4-12B-it")
    return value


class ModelSettings(SettingsModel):
    """Which checkpoint to serve and under what name clients ask for it."""

    # Directory of the checkpoint inside the model bucket (mounted at cloudRun.mount.mountPath).
    path: str
    served_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")
    # Where `path` comes from; the import job copies it into the bucket. Unset: you fill the bucket yourself.
    source: WeightSource | None = None
    # Where the speculative drafter (vllm.speculative.drafter, its own bucket path) comes from.
    drafter_source: WeightSource | None = None

    @field_validator("path")
    @classmethod
    def _inside_bucket(cls, value: str) -> str:
        return _bucket_path(value)


class BucketSettings(SettingsModel):
    """The private GCS bucket that holds the weights."""

    # Bucket location; unset means the stack's region (same-region reads are fastest and free).
    location: str | None = None
    force_destroy: bool = False


class StackSettings(SettingsModel):
    """Everything one stack file says, validated as a whole."""

    accelerator: Accelerator
    # Where `gcp:project` is unset the offline preview substitutes a placeholder; `pulumi up` requires it.
    project: str | None = None
    region: str
    image: PinnedImage | None = None
    model: ModelSettings
    vllm: VllmSettings
    cloud_run: CloudRunSettings | None = None
    # TPU stacks (accelerator tpu-v6e): zone, tier, network edge of the queued-resource node.
    tpu: TpuSettings | None = None
    bucket: BucketSettings = BucketSettings()
    model_import: ModelImportSettings = ModelImportSettings()
    registry: RegistrySettings = RegistrySettings()
    # How to plan capacity when model.path is not a built-in profile (stacks/capacity.py).
    capacity: CapacitySettings = CapacitySettings()
    labels: dict[str, str] = Field(default_factory=dict)
    # The optional load-generator job beside a Cloud Run service (stacks/bench.py); absent: none.
    bench: BenchSettings | None = None

    @field_validator("labels")
    @classmethod
    def _gcp_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
                raise ValueError(
                    f"label {key}={value!r}: keys and values must be lowercase letters, digits, '_' or '-' "
                    "(keys start with a letter; at most 63 characters)"
                )
        return labels

    @model_validator(mode="after")
    def _drafter_inside_bucket(self) -> Self:
        if self.drafter_path is not None:
            try:
                _bucket_path(self.drafter_path)
            except ValueError as error:
                raise ValueError(f"vllm.speculative.drafter: {error}") from None
        return self

    @model_validator(mode="after")
    def _one_source_per_path(self) -> Self:
        drafter = self.drafter_path
        if self.model.drafter_source is not None and not drafter:
            raise ValueError("model.drafterSource: there is no vllm.speculative.drafter to import it for")
        if drafter and self.model.source is not None and self.model.drafter_source is None:
            raise ValueError(
                f"model.drafterSource: vllm.speculative.drafter {drafter!r} has no source, so the import would leave "
                "it out of the bucket; give it one (huggingFace: {repo, revision} or gcs: gs://...)"
            )
        if drafter and self.model.drafter_source is not None and drafter == self.model.path:
            raise ValueError("vllm.speculative.drafter: the drafter needs its own bucket path, not model.path")
        return self

    @model_validator(mode="after")
    def _bench_beside_cloud_run(self) -> Self:
        if self.bench is not None and self.accelerator in TPU_CHIPS:
            raise ValueError(
                "bench: the load-generator job runs beside a Cloud Run service; a tpu-v6e stack has none "
                "(run `python -m verify bench` from a machine in the TPU's region instead)"
            )
        return self

    @model_validator(mode="after")
    def _fits_the_platform(self) -> Self:
        family = image_family_problem(self.image_ref, self.accelerator)
        quantization = quantization_problem(self.model.path, self.vllm.quantization)
        if family or quantization:
            raise ValueError("; ".join(p for p in (family, quantization) if p))
        gpu = CLOUD_RUN_GPUS.get(self.accelerator)
        if gpu is not None:
            self._check_cloud_run(gpu)
        elif self.accelerator in TPU_CHIPS and self.cloud_run is not None:
            raise ValueError("cloudRun: a TPU stack does not run on Cloud Run; remove the cloudRun block")
        if self.accelerator in TPU_CHIPS:
            self._check_tpu()
        elif self.tpu is not None:
            raise ValueError("tpu: only a tpu-v6e stack takes a tpu block; remove it")
        return self

    def _check_tpu(self) -> None:
        if self.tpu is None:
            raise ValueError("tpu: a tpu-v6e stack needs a tpu block (at least tpu.zone, e.g. us-east5-a)")
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
        if self.registry.build is not None:
            raise ValueError(
                "registry.build: a TPU node pulls its pinned image through the stack's Docker Hub mirror only "
                "(its account reads that repository alone); remove registry.build from a tpu-v6e stack"
            )

    def _check_cloud_run(self, gpu: CloudRunGpu) -> None:
        if self.cloud_run is None:
            raise ValueError(f"cloudRun: a {gpu.display_name} stack needs a cloudRun block (cpu, memoryGib, ...)")
        run = self.cloud_run
        problems = [
            region_problem(gpu, self.region, key="region"),
            *gpu_sizing_problems(
                gpu, cpu=run.cpu, memory_gib=run.memory_gib, cpu_key="cloudRun.cpu", memory_key="cloudRun.memoryGib"
            ),
        ]
        if run.concurrency is not None:
            problems.append(
                concurrency_problem(
                    concurrency=run.concurrency, max_num_seqs=self.vllm.max_num_seqs, key="cloudRun.concurrency"
                )
            )
        problems += gpu_service_problems(
            gpu, run, max_num_seqs=self.vllm.max_num_seqs, prefix="cloudRun.", seqs_key="vllm.maxNumSeqs"
        )
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))
        if self.vllm.tensor_parallel_size != 1:
            raise ValueError("vllm.tensorParallelSize: Cloud Run attaches exactly one GPU per instance; allowed: 1")

    @property
    def image_ref(self) -> str:
        return self.image or DEFAULT_IMAGES[self.accelerator]

    @property
    def gpu(self) -> CloudRunGpu | None:
        return CLOUD_RUN_GPUS.get(self.accelerator)

    @property
    def drafter_path(self) -> str | None:
        """The speculative drafter's directory in the model bucket (vllm.speculative.drafter), if there is one."""
        drafter = self.vllm.speculative.drafter if self.vllm.speculative else None
        return drafter.strip("/") if drafter else None

    def weight_sources(self) -> dict[str, tuple[str, WeightSource]]:
        """Each checkpoint to import, by role (`target`, `drafter`): its bucket path and its one source."""
        found: dict[str, tuple[str, WeightSource]] = {}
        if self.model.source is not None:
            found["target"] = (self.model.path, self.model.source)
        if self.model.drafter_source is not None and self.drafter_path:
            found["drafter"] = (self.drafter_path, self.model.drafter_source)
        return found

    def cloud_run_concurrency(self) -> int:
        """Per-instance concurrency: never below what vLLM batches."""
        assert self.cloud_run is not None
        return self.cloud_run.concurrency or self.vllm.max_num_seqs

    def model_root(self) -> str:
        return self.cloud_run.mount.mount_path if self.cloud_run else "/mnt/models"

    def serve_args(self) -> list[str]:
        """The container's `vllm serve` arguments."""
        port = self.cloud_run.port if self.cloud_run else (self.tpu.port if self.tpu else 8000)
        root = self.model_root()
        return self.vllm.serve_args(
            model_path=f"{root}/{self.model.path}",
            served_model_name=self.model.served_name,
            port=port,
            model_root=root,
        )
