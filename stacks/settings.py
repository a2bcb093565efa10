"""One stack's complete settings: parsed once from its config, then read-only everywhere.

Why: every default that differs per accelerator and every cross-field rule (GPU minimums, regions,
Cloud Run concurrency versus vLLM's batch) is decided here, before a resource exists, so a wrong stack
file fails the preview with the key at fault rather than a rollout ten minutes later.

Which platform a stack runs on is decided once, by its `accelerator`: `StackSettings` is a union
discriminated on that key, a `CloudRunStack` (GPU stacks, with a `cloudRun` block) or a `TpuStack`
(with a `tpu` block). Each variant owns what differs by platform (the vLLM port, the model root, the
APIs to enable, the job image, what the capacity planner assumes), so no other module asks which
platform it is looking at; `deploy()` dispatches on the variant once.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Self

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from serving.accelerators import CLOUD_RUN_GPUS, TPU_CHIPS, Accelerator, CloudRunGpu, TpuChip
from serving.adapter_routes_runtime import ROUTES_ENV
from serving.adapter_versions import ROUTES_OBJECT, version_folder
from serving.catalog import catalog
from serving.cloud_run_containers import split_problem
from serving.cloud_run_rules import concurrency_problem, gpu_sizing_problems, region_problem, request_concurrency
from serving.cold_start import ColdStartEstimate, StreamerSizing, tpu_stream_problem
from serving.container import MODEL_ROOT
from serving.gcp_names import bucket_name_problem, bucket_path_problem
from serving.image_digests import pinned_reference
from serving.images import CUDA_IMAGE, DEFAULT_IMAGES
from serving.lora import (
    ROUTES_MIDDLEWARE,
    ROUTES_MODULE,
    ROUTES_SOURCE,
    LoraLimits,
    adapters_dir,
    resolver_env,
    routes_env,
)
from serving.pricing import CloudRunShape, GkeShape, TpuShape, idle_chips_problem
from serving.route_guard import GuardConfig, guard_args, launcher_command
from serving.shapes import Platform, shapes, tpu_slices
from serving.vllm_args import with_tensor_parallel
from stacks.adapters import AdapterSettings, LoraSlots, adapter_problems, lora_limits
from stacks.apis import BASE_APIS, GKE_APIS, GKE_GATEWAY_APIS, TPU_APIS
from stacks.base import SettingsModel
from stacks.bench import BenchSettings
from stacks.capacity import CapacitySettings, PlatformCapacity, cloud_run_capacity, gke_capacity, tpu_capacity
from stacks.catalog_checks import Served, catalog_problems, served_checkpoint
from stacks.catalog_model import resolve_catalog_model
from stacks.checkpoint_format import quantization_problem
from stacks.cloud_run import CloudRunSettings
from stacks.cloud_run_limits import gpu_service_problems, quota_warning
from stacks.compile_cache import CompileCacheSettings, cache_block, cache_path_problems
from stacks.gke import GkeSettings
from stacks.gke_rules import gke_stack_problems
from stacks.image_family import CUDA_BUILD, TPU_BUILD, ImageBuild, image_family_problem
from stacks.images import PinnedImage
from stacks.load_plan import (
    checkpoint_bytes,
    cold_start_estimate,
    derived_load_seconds,
    load_problems,
    loader_args,
    streamer_sizing,
)
from stacks.model_load import FuseLoad, ModelLoad, StreamLoad, load_block
from stacks.monitoring import MonitoringSettings
from stacks.placement_cost import worst_case_shape
from stacks.registry import RegistrySettings
from stacks.route_guard import answered_names
from stacks.tpu import TpuSettings, tpu_zone
from stacks.vllm import SpeculativeDecoding, VllmSettings
from stacks.weights import ModelImportSettings, WeightSource

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def _bucket_path(value: str) -> str:
    problem = bucket_path_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _rented_on(platform: Platform) -> tuple[str, ...]:
    """The accelerators some shape of ``platform`` rents, in the table's order: what a variant accepts."""
    rented = {entry.accelerator for entry in shapes(platform=platform)}
    return tuple(accelerator.value for accelerator in Accelerator if accelerator.value in rented)


def _offered_on(platform: Platform, accelerator: Accelerator) -> Accelerator:
    """The variant's accelerator, refused (as pydantic words a Literal's choices) when its platform rents none."""
    allowed = _rented_on(platform)
    if accelerator.value not in allowed:
        names = [f"'{name}'" for name in allowed]
        raise ValueError(
            f"Input should be {' or '.join(names)}"
            if len(names) < 3
            else f"Input should be {', '.join(names[:-1])} or {names[-1]}"
        )
    return accelerator


# How messages name a TPU stack: by the accelerator values that make one (the TPU VM shapes' generations).
_TPU_STACK = " or ".join(_rented_on("tpu-vm"))


class ModelSettings(SettingsModel):
    """Which checkpoint to serve and under what name clients ask for it.

    Short form: `id`, `variant` and `revision` name a catalog checkpoint (serving/catalog), and
    stacks/catalog_model.py fills `path`, `source` (and the drafter's) from it before validation.
    Long form: `path` and `source` directly.
    """

    # The catalog model, its variant, and the pinned commit of the variant's repo (short form).
    id: str | None = None
    variant: str | None = None
    revision: str | None = None
    # The pinned commit of the MTP drafter the catalog pairs with the variant (with vllm.speculative).
    drafter_revision: str | None = None
    # Directory of the checkpoint inside the model bucket (mounted at cloudRun.mount.mountPath).
    path: str
    served_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")
    # Where `path` comes from; the import job copies it into the bucket. Unset: you fill the bucket yourself.
    source: WeightSource | None = None
    # Where the speculative drafter (vllm.speculative.drafter, its own bucket path) comes from.
    drafter_source: WeightSource | None = None
    # How vLLM reads the weights, the drafter's too: `fuse` (the default) or `stream` (stacks/model_load.py).
    load: ModelLoad = FuseLoad()

    @field_validator("path")
    @classmethod
    def _inside_bucket(cls, value: str) -> str:
        return _bucket_path(value)

    @field_validator("load", mode="before")
    @classmethod
    def _load_shorthand(cls, value: Any) -> Any:  # noqa: ANN401 - raw stack data
        return load_block(value)


def _written_keys(model: type[SettingsModel]) -> frozenset[str]:
    """The keys a block may hold, as stack files write them (camelCase) or in snake_case."""
    return frozenset(key for name, field in model.model_fields.items() for key in (name, field.alias or name))


# The blocks stacks/catalog_model.py reads before validation, and the keys each may hold.
_PRE_VALIDATED_KEYS = {"model": _written_keys(ModelSettings), "vllm.speculative": _written_keys(SpeculativeDecoding)}


class BucketSettings(SettingsModel):
    """The private GCS bucket that holds the weights."""

    # Bucket location; unset means the stack's region (same-region reads are fastest and free).
    location: str | None = None
    force_destroy: bool = False
    # The bucket's global name; unset: Pulumi names it. `model.load: stream` needs it, since vLLM's
    # arguments name gs://<bucket>/<path> before the bucket exists.
    name: str | None = None

    @field_validator("name")
    @classmethod
    def _bucket_name(cls, value: str | None) -> str | None:
        problem = bucket_name_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value


class _StackSettings(SettingsModel):
    """What every stack file says, whatever its platform; validated as a whole."""

    # The vLLM image family the serving image must be, set by each variant (stacks/image_family.py).
    IMAGE_BUILD: ClassVar[ImageBuild]
    # The `platform` stack output (serving.outputs) and the union's tag, set by each variant.
    PLATFORM: ClassVar[str]

    # Each variant narrows it to its platform's accelerators (the union's discriminator).
    accelerator: Accelerator
    # Where `gcp:project` is unset the offline preview substitutes a placeholder; `pulumi up` requires it.
    project: str | None = None
    region: str
    image: PinnedImage | None = None
    model: ModelSettings
    vllm: VllmSettings
    bucket: BucketSettings = BucketSettings()
    model_import: ModelImportSettings = ModelImportSettings()
    registry: RegistrySettings = RegistrySettings()
    # How to plan capacity when model.path is not a built-in profile (stacks/capacity.py).
    capacity: CapacitySettings = CapacitySettings()
    labels: dict[str, str] = Field(default_factory=dict)
    # Metrics collection, the dashboard, the alerts and an optional budget (stacks/monitoring.py).
    monitoring: MonitoringSettings = MonitoringSettings()
    # Keep vLLM's compile cache in the model bucket between starts (stacks/compile_cache.py); off by default.
    compile_cache: CompileCacheSettings = CompileCacheSettings()
    # LoRA adapters served on the model, loaded from the bucket by name (stacks/adapters.py); and vLLM's slots.
    adapters: tuple[AdapterSettings, ...] = ()
    lora: LoraSlots = LoraSlots()

    @model_validator(mode="before")
    @classmethod
    def _catalog_model(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        return resolve_catalog_model(data, _PRE_VALIDATED_KEYS)

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

    @field_validator("compile_cache", mode="before")
    @classmethod
    def _cache_shorthand(cls, value: Any) -> Any:  # noqa: ANN401 - raw stack data
        return cache_block(value)

    @model_validator(mode="after")
    def _weights_outside_the_cache(self) -> Self:
        if self.compile_cache.keep:
            paths = {"model.path": self.model.path}
            if self.drafter_path:
                paths["vllm.speculative.drafter"] = self.drafter_path
            problems = cache_path_problems(paths)
            if problems:
                raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _drafter_inside_bucket(self) -> Self:
        if self.drafter_path is not None:
            try:
                _bucket_path(self.drafter_path)
            except ValueError as error:
                raise ValueError(f"vllm.speculative.drafter: {error}") from None
        return self

    @model_validator(mode="after")
    def _image_fits_the_accelerator(self) -> Self:
        family = image_family_problem(self.image_ref, self.accelerator, self.image_build)
        quantization = quantization_problem(self.checkpoint_name, self.vllm.quantization)
        if family or quantization:
            raise ValueError("; ".join(p for p in (family, quantization) if p))
        return self

    @model_validator(mode="after")
    def _agrees_with_the_catalog(self) -> Self:
        problems = catalog_problems(self.model, self.vllm, accelerator=self.accelerator, chips=self.accelerator_chips)
        if problems:
            raise ValueError("; ".join(problems))
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
    def _adapters_fit_the_model(self) -> Self:
        if not self.adapters:
            if self.lora != LoraSlots():
                raise ValueError(
                    "lora: sizes LoRA slots, but the stack declares no adapters; remove lora or add adapters"
                )
            return self
        problems = adapter_problems(
            self.adapters, self.lora, served_name=self.model.served_name, model_ids=frozenset(catalog())
        )
        accepted = self.adapter_bases()
        for index, adapter in enumerate(self.adapters):
            if adapter.base.lower() not in {name.lower() for name in accepted}:
                problems.append(
                    f"adapters[{index}].base: {adapter.base!r} is not the model this stack serves; an adapter only "
                    f"works on the base it was trained on: {', '.join(sorted(accepted))}"
                )
        platform = self._adapter_platform_problem()
        if platform:
            problems.append(platform)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def adapter_bases(self) -> set[str]:
        """The names an adapter's base may have: the catalog model's id and every variant's repo (a LoRA trained on
        the bf16 weights serves on their QAT or FP8 variant), else the served checkpoint's own name."""
        served = served_checkpoint(self.model)
        if isinstance(served, Served):
            return {served.model.id, *(variant.repo for variant in served.model.variants.values())}
        return {self.checkpoint_name}

    def _adapter_platform_problem(self) -> str | None:
        """Where the bucket-resolver path is not wired: a platform says why (each variant overrides)."""
        return None

    @property
    def model_root(self) -> str:
        """Where vLLM finds the checkpoints (each platform says)."""
        raise NotImplementedError

    @property
    def lora_limits(self) -> LoraLimits | None:
        """vLLM's LoRA sizes (GPU slots, host slots, rank); None without adapters."""
        return lora_limits(self.adapters, self.lora)

    def lora_env(self) -> dict[str, str]:
        """The serving container's env that loads adapter versions from the bucket by name and lets the served
        model's name pass the route table unchanged (none without adapters)."""
        if not self.adapters:
            return {}
        return {**resolver_env(self.model_root), **routes_env([self.model.served_name])}

    def adapter_bucket_env(self) -> dict[str, str]:
        """Env set to `gs://<model bucket>/<object>` by the serving component: where the route table is."""
        return {ROUTES_ENV: ROUTES_OBJECT} if self.adapters else {}

    @property
    def adapters_dir(self) -> str | None:
        return adapters_dir(self.model_root) if self.adapters else None

    def serving_command(self) -> list[str]:
        """The container command before vLLM's arguments: the launcher that starts vLLM behind the route guard
        (serving/route_guard.py), on every platform, with or without adapters (then with the adapter route
        table's middleware registered too, inside the guard)."""
        modules = ((ROUTES_MODULE, ROUTES_SOURCE),) if self.adapters else ()
        return launcher_command(self.guard_config(), modules)

    def guard_config(self) -> GuardConfig:
        """What this server's route guard admits: its names, its key, its collectors (each platform says)."""
        raise NotImplementedError

    def answered_names(self) -> tuple[str, ...]:
        """The `model` names the server answers (stacks/route_guard.py): the served name, the declared adapters."""
        return answered_names(self.model.served_name, self.adapters)

    def adapter_sources(self) -> dict[str, tuple[str, AdapterSettings]]:
        """Each adapter to import, by import role (`a-<name>`): its version's bucket folder and its settings."""
        return {
            f"a-{adapter.name}": (version_folder(adapter.name, adapter.version_label), adapter)
            for adapter in self.adapters
        }

    @property
    def checkpoint_name(self) -> str:
        """What names the served checkpoint: its Hugging Face repo when it has one, else its bucket path."""
        source = self.model.source
        return source.hugging_face.repo if source is not None and source.hugging_face is not None else self.model.path

    @property
    def accelerator_chips(self) -> int:
        """GPUs or TPU chips one serving unit has (a Cloud Run instance: 1; a TPU node: its slice's chips)."""
        return 1

    @property
    def image_build(self) -> ImageBuild:
        """The vLLM image family the serving image must be (a GKE fleet's follows its nodes)."""
        return self.IMAGE_BUILD

    @property
    def image_ref(self) -> str:
        """The vLLM image the stack serves: its pinned `image`, or the accelerator's default, by the digest
        serving/data/image-digests.json records for that tag where it records one."""
        return pinned_reference(self.image or DEFAULT_IMAGES[self.accelerator])

    @property
    def drafter_path(self) -> str | None:
        """The speculative drafter's directory in the model bucket (vllm.speculative.drafter), if there is one."""
        drafter = self.vllm.speculative.drafter if self.vllm.speculative else None
        return drafter.strip("/") if drafter else None

    @property
    def model_dirs(self) -> list[str]:
        """The checkpoint directories in the bucket vLLM reads: the model, and the drafter if any."""
        return [self.model.path, *([self.drafter_path] if self.drafter_path else [])]

    def weight_sources(self) -> dict[str, tuple[str, WeightSource]]:
        """Each checkpoint to import, by role (`target`, `drafter`): its bucket path and its one source."""
        found: dict[str, tuple[str, WeightSource]] = {}
        if self.model.source is not None:
            found["target"] = (self.model.path, self.model.source)
        if self.model.drafter_source is not None and self.drafter_path:
            found["drafter"] = (self.drafter_path, self.model.drafter_source)
        return found

    def _vllm_serve_args(self, *, port: int, model_root: str) -> list[str]:
        args = self.vllm.serve_args(
            model_path=f"{model_root}/{self.model.path}",
            served_model_name=self.model.served_name,
            port=port,
            model_root=model_root,
        )
        limits = self.lora_limits
        if limits is not None:
            args += limits.serve_args()
        # The route table rewrites a public adapter name to its version inside the guard, which checks first.
        return [*args, *guard_args(*([ROUTES_MIDDLEWARE] if self.adapters else []))]


def _refuse_foreign_block(data: Any, key: str, message: str) -> None:  # noqa: ANN401 - raw stack data
    """A block of the other platform gets a sentence saying so, not "unknown key"."""
    if isinstance(data, dict) and (key in data or _snake(key) in data):
        raise ValueError(message)


def _require_block(data: Any, key: str, message: str) -> None:  # noqa: ANN401 - raw stack data
    if isinstance(data, dict) and key not in data and _snake(key) not in data:
        raise ValueError(message)


def _snake(key: str) -> str:
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in key)


class CloudRunStack(_StackSettings):
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
        return _offered_on("cloud-run", accelerator)

    @model_validator(mode="before")
    @classmethod
    def _cloud_run_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        _refuse_foreign_block(data, "tpu", f"tpu: only a {_TPU_STACK} stack takes a tpu block; remove it")
        accelerator = data.get("accelerator") if isinstance(data, dict) else None
        name = CLOUD_RUN_GPUS[accelerator].display_name if accelerator in CLOUD_RUN_GPUS else "Cloud Run GPU"
        _require_block(data, "cloudRun", f"cloudRun: a {name} stack needs a cloudRun block (cpu, memoryGib, ...)")
        return data

    @model_validator(mode="after")
    def _fits_cloud_run(self) -> Self:
        gpu, run = self.gpu, self.cloud_run
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
        if not any(p and p.startswith(("cloudRun.cpu", "cloudRun.memoryGib")) for p in problems):
            # Only a size inside Cloud Run's bounds is worth splitting between the containers.
            problems.append(
                split_problem(
                    gpu,
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
    def gpu(self) -> CloudRunGpu:
        return CLOUD_RUN_GPUS[self.accelerator]

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
        return cloud_run_capacity(self.gpu, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """Quota a new project lacks for this stack (a Cloud Run GPU quota beyond a first request)."""
        warning = quota_warning(self.gpu, self.cloud_run)
        return [warning] if warning else []

    def billing_shape(self) -> CloudRunShape:
        """What one instance bills (GPU, CPU, memory, zonal redundancy) and how many run: the `billing` output."""
        run = self.cloud_run
        return CloudRunShape(
            accelerator=self.accelerator,
            region=self.region,
            cpu=run.cpu,
            memory_gib=run.memory_gib,
            gpu_zonal_redundancy=not run.gpu_zonal_redundancy_disabled,
            min_instances=run.min_instances,
            max_instances=run.max_instances,
        )


class TpuStack(_StackSettings):
    """A stack served by vLLM on one TPU node from a queued resource (accelerator tpu-v6e)."""

    PLATFORM: ClassVar[str] = "tpu"
    IMAGE_BUILD: ClassVar[ImageBuild] = TPU_BUILD

    # An accelerator a TPU VM shape of the table rents.
    accelerator: Accelerator
    # Zone, tier and network edge of the queued-resource node.
    tpu: TpuSettings

    @field_validator("accelerator")
    @classmethod
    def _a_tpu_vm_generation(cls, accelerator: Accelerator) -> Accelerator:
        return _offered_on("tpu-vm", accelerator)

    @model_validator(mode="before")
    @classmethod
    def _tpu_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        _refuse_foreign_block(
            data, "cloudRun", "cloudRun: a TPU stack does not run on Cloud Run; remove the cloudRun block"
        )
        _refuse_foreign_block(
            data,
            "bench",
            "bench: the load-generator job runs beside a Cloud Run service; a " + _TPU_STACK + " stack has none "
            "(run `gemma-verify bench` from a machine in the TPU's region instead)",
        )
        _require_block(data, "tpu", f"tpu: a {_TPU_STACK} stack needs a tpu block (at least tpu.zone, e.g. us-east5-a)")
        return data

    @model_validator(mode="after")
    def _fits_the_node(self) -> Self:
        generation = self.accelerator.value
        slices = tpu_slices(generation)
        if self.tpu.accelerator_type not in slices:
            raise ValueError(
                f"tpu.acceleratorType {self.tpu.accelerator_type!r} is not a slice of {generation}; allowed: "
                f"{', '.join(slices)} (name the slice: the default is the smallest of the table's first TPU generation)"
            )
        for index, placement in enumerate(self.tpu.placement_list):
            tpu_zone(f"tpu.placements[{index}].zone" if self.tpu.placements else "tpu.zone", placement.zone, generation)
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
            raise ValueError(idle_chips_problem(self.billing_shape(), self.vllm.tensor_parallel_size))
        if not isinstance(self.model.load, FuseLoad):
            raise ValueError(tpu_stream_problem(self.model.path))
        if self.model.load.parallel_downloads:
            raise ValueError(
                "model.load.parallelDownloads: a TPU node copies the weights to its disk before vLLM starts; the "
                f"gcsfuse file cache is a Cloud Run mount option; remove it from a {_TPU_STACK} stack"
            )
        if self.registry.build is not None:
            raise ValueError(
                "registry.build: a TPU node pulls its pinned image through the stack's Docker Hub mirror only "
                f"(its account reads that repository alone); remove registry.build from a {_TPU_STACK} stack"
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
    def chip(self) -> TpuChip:
        return TPU_CHIPS[self.accelerator]

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
        return tpu_capacity(self.chip, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """TPU quota shows as the queued request's state (WAITING_FOR_RESOURCES); only a flex-start zone
        outside Google's published list is worth a warning before `pulumi up` (stacks/tpu.py)."""
        return self.tpu.placement_warnings()

    def billing_shape(self) -> TpuShape:
        """What the node bills (chips of its slice at its provisioning model's rate): the `billing` output.
        With tpu.placements, the worst case over the list (stacks/placement_cost.py)."""
        return worst_case_shape(self.tpu)


class GkeStack(_StackSettings):
    """A fleet on GKE: nodes of one accelerator shape (GPU or TPU), one vLLM replica per node (a `gke` block)."""

    PLATFORM: ClassVar[str] = "gke"

    # Any accelerator a GKE machine type of the shapes table carries (stacks/gke_rules.py checks the pair).
    accelerator: Accelerator
    gke: GkeSettings

    @model_validator(mode="before")
    @classmethod
    def _gke_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        for key in ("cloudRun", "tpu", "bench"):
            _refuse_foreign_block(data, key, f"{key}: a GKE stack takes a gke block instead; remove {key}")
        return data

    @model_validator(mode="after")
    def _no_kept_cache(self) -> Self:
        if self.compile_cache.keep:
            raise ValueError(
                "compileCache.keep: not wired for GKE fleets yet (their pods would need a read-write Cloud Storage "
                "FUSE volume on the cache folder, or GKE Inference Quickstart's xla_cache_bucket_uri on TPU); "
                "it is kept on Cloud Run and TPU stacks (docs/cold-start.md)"
            )
        return self

    @model_validator(mode="after")
    def _reads_through_fuse(self) -> Self:
        load = self.model.load
        if not isinstance(load, FuseLoad) or load.parallel_downloads:
            raise ValueError(
                "model.load: a GKE fleet reads the bucket through the Cloud Storage FUSE CSI driver (gke.mount); "
                "stream and parallelDownloads are wired for Cloud Run stacks only; use model.load: fuse"
            )
        return self

    @model_validator(mode="after")
    def _fits_the_fleet(self) -> Self:
        problems = gke_stack_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def image_build(self) -> ImageBuild:
        return TPU_BUILD if self.accelerator in TPU_CHIPS else CUDA_BUILD

    def _adapter_platform_problem(self) -> str | None:
        if self.accelerator in TPU_CHIPS:
            return (
                "adapters: LoRA on vllm-tpu is not confirmed for Gemma 4, so a GKE TPU fleet serves none; serve "
                "adapters on a GKE GPU fleet or a Cloud Run GPU stack (docs/adapters.md)"
            )
        return None

    @property
    def mount_options(self) -> tuple[str, ...]:
        """The pods' gcsfuse options; with adapters, implicit-dirs (vLLM's resolver needs adapters/<name>/ as
        directories, and the imported objects carry no folder placeholders)."""
        options = tuple(self.gke.mount.mount_options())
        if self.adapters and "implicit-dirs" not in options:
            options = (*options, "implicit-dirs")
        return options

    @property
    def replicas_per_node(self) -> int:
        """vLLM replicas sharing one node: a GPU node's accelerators over the tensor-parallel size when it
        divides them (two TP-2 replicas on a 4-GPU node), else 1. TPU slices keep one replica per node."""
        shape = self.gke.node_pool.shape
        tensor_parallel = self.vllm.tensor_parallel_size
        if shape.is_tpu or shape.accelerators % tensor_parallel:
            return 1
        return shape.accelerators // tensor_parallel

    @property
    def accelerator_chips(self) -> int:
        """Accelerators one replica serves over."""
        return self.gke.node_pool.shape.accelerators // self.replicas_per_node

    @property
    def pod_cpu(self) -> float:
        return self.gke.pod_cpu(self.replicas_per_node)

    @property
    def pod_memory_gib(self) -> float:
        return self.gke.pod_memory_gib(self.replicas_per_node)

    @property
    def import_image(self) -> str:
        """The import job's base image: the CUDA vLLM image carries the clients (the TPU one has no twin)."""
        return self.model_import.image or pinned_reference(CUDA_IMAGE)

    @property
    def apis(self) -> tuple[str, ...]:
        gateway = GKE_GATEWAY_APIS if self.gke.uses_gateway else ()
        return tuple(sorted({*BASE_APIS, *GKE_APIS, *gateway, *self.monitoring.apis}))

    @property
    def zone(self) -> str | None:
        """The fleet spans gke.nodePool.zones: no single zone to name."""
        return None

    @property
    def port(self) -> int:
        return self.gke.port

    def guard_config(self) -> GuardConfig:
        """GKE: the key on every served route but /health; /metrics without it only from outside the client
        ranges, where the NetworkPolicy admits Managed Prometheus and the endpoint pickers alone."""
        return GuardConfig(
            names=self.answered_names(),
            key="required",
            scrapers="network",
            clients=self.gke.client_ranges,
            adapters_dir=self.adapters_dir,
            versioned=bool(self.adapters),
        )

    @property
    def model_root(self) -> str:
        return self.gke.mount.mount_path

    def serve_args(self) -> list[str]:
        """The container's `vllm serve` arguments, tensor parallel over the node's accelerators always stated."""
        args = self._vllm_serve_args(port=self.port, model_root=self.model_root)
        return with_tensor_parallel(args, self.vllm.tensor_parallel_size)

    def capacity_platform(self) -> PlatformCapacity:
        return gke_capacity(self.accelerator, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """Accelerator quota shows in the plan's notes (per node pool) and in `verify preflight`."""
        return []

    def _nodes_for(self, replicas: int) -> int:
        """Nodes that `replicas` vLLM replicas fill, packed replicas_per_node to a node."""
        return -(-replicas // self.replicas_per_node)

    def billing_shape(self) -> GkeShape:
        """What each node bills and how many run (min, max), plus the cluster fee: the `billing` output."""
        pool = self.gke.node_pool
        return GkeShape(
            machine_type=pool.machine_type,
            accelerator=self.accelerator,
            accelerators_per_node=pool.shape.accelerators,
            provisioning_model=pool.provisioning.value,
            region=self.region,
            min_nodes=0 if self.gke.replicas.parked else max(pool.min_nodes, self._nodes_for(self.gke.replicas.min)),
            max_nodes=0 if self.gke.replicas.parked else self._nodes_for(self.gke.replicas.max),
            cluster_created=self.gke.cluster.existing is None,
            system_machine_type=self.gke.cluster.system_machine_type if self.gke.cluster.existing is None else None,
            system_nodes=len(pool.zones),
        )


def _platform_tag(data: Any) -> str | None:  # noqa: ANN401 - raw stack data or a parsed stack
    """Which variant a stack file is: a `gke` block makes it a fleet; otherwise its accelerator decides."""
    if isinstance(data, _StackSettings):
        return str(type(data).PLATFORM)
    if not isinstance(data, dict) or data.get("accelerator") is None:
        return None
    accelerator = data["accelerator"]
    by_accelerator = {
        **dict.fromkeys(_rented_on("cloud-run"), CloudRunStack.PLATFORM),
        **dict.fromkeys(_rented_on("tpu-vm"), TpuStack.PLATFORM),
    }
    return GkeStack.PLATFORM if "gke" in data else by_accelerator.get(accelerator, str(accelerator))


def stack_variant(data: Any) -> type[CloudRunStack] | type[TpuStack] | type[GkeStack] | None:  # noqa: ANN401 - raw stack data
    """The model a stack file is validated with (the union's discriminator, applied by stacks.loading), or None
    when its `accelerator` is missing or names no platform.

    Why not the union's own validator: it holds all three variants, so every plan built the validators of the
    two platforms it is not (settings models build theirs on first use: stacks/base.py)."""
    return _VARIANTS.get(_platform_tag(data) or "")


_VARIANTS: dict[str, type[CloudRunStack] | type[TpuStack] | type[GkeStack]] = {
    variant.PLATFORM: variant for variant in (CloudRunStack, TpuStack, GkeStack)
}

# One stack file: the variant is chosen by its `gke` block, else by `accelerator` (stack_variant; stacks.loading
# reports a wrong one by name).
StackSettings = Annotated[
    Annotated[CloudRunStack, Tag(CloudRunStack.PLATFORM)]
    | Annotated[TpuStack, Tag(TpuStack.PLATFORM)]
    | Annotated[GkeStack, Tag(GkeStack.PLATFORM)],
    Discriminator(_platform_tag),
]
