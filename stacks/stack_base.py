"""What every stack file says, whatever its platform (StackBase), and the helpers each variant's checks share.

Why a module apart from stacks/settings.py: each platform's variant (stacks/cloud_run_stack.py,
stacks/tpu_stack.py, stacks/gke_stack.py) extends this base; the union that picks a variant stays in
stacks/settings.py. Every cross-field rule that holds on every platform (labels, the weights outside the
compile cache, the catalog, adapters, the image family) is decided here, before a resource exists.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator

from serving.adapter_routes_runtime import ROUTES_ENV
from serving.adapter_versions import ROUTES_OBJECT, version_folder
from serving.catalog import catalog
from serving.gcp_names import bucket_name_problem
from serving.image_digests import pinned_reference
from serving.images import DEFAULT_IMAGES
from serving.lora import (
    ROUTES_MIDDLEWARE,
    ROUTES_MODULE,
    ROUTES_SOURCE,
    LoraLimits,
    adapters_dir,
    resolver_env,
    routes_env,
)
from serving.route_guard import GuardConfig, guard_args, launcher_command
from serving.shapes import Accelerator, Platform, shapes
from stacks.adapters import AdapterSettings, LoraSlots, adapter_problems, lora_limits
from stacks.base import SettingsModel
from stacks.capacity import CapacitySettings
from stacks.catalog_checks import Served, catalog_problems, served_checkpoint
from stacks.catalog_model import resolve_catalog_model
from stacks.checkpoint_format import quantization_problem
from stacks.compile_cache import CompileCacheSettings, cache_block, cache_path_problems
from stacks.image_family import ImageBuild, image_family_problem
from stacks.images import PinnedImage
from stacks.model_settings import ModelSettings, bucket_path
from stacks.monitoring import MonitoringSettings
from stacks.registry import RegistrySettings
from stacks.route_guard import answered_names
from stacks.vllm import SpeculativeDecoding, VllmSettings
from stacks.weights import ModelImportSettings, WeightSource

_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def rented_on(platform: Platform) -> tuple[str, ...]:
    """The accelerators some shape of ``platform`` rents, in the table's order: what a variant accepts."""
    rented = {entry.accelerator for entry in shapes(platform=platform)}
    return tuple(accelerator for accelerator in Accelerator.every() if accelerator in rented)


def offered_on(platform: Platform, accelerator: Accelerator) -> Accelerator:
    """The variant's accelerator, refused (as pydantic words a Literal's choices) when its platform rents none."""
    allowed = rented_on(platform)
    if accelerator not in allowed:
        names = [f"'{name}'" for name in allowed]
        raise ValueError(
            f"Input should be {' or '.join(names)}"
            if len(names) < 3
            else f"Input should be {', '.join(names[:-1])} or {names[-1]}"
        )
    return accelerator


# How messages name a TPU stack: by the accelerator values that make one (the TPU VM shapes' generations).
TPU_STACK = " or ".join(rented_on("tpu-vm"))


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


class StackBase(SettingsModel):
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
                bucket_path(self.drafter_path)
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


def refuse_foreign_block(data: Any, key: str, message: str) -> None:  # noqa: ANN401 - raw stack data
    """A block of the other platform gets a sentence saying so, not "unknown key"."""
    if isinstance(data, dict) and (key in data or _snake(key) in data):
        raise ValueError(message)


def require_block(data: Any, key: str, message: str) -> None:  # noqa: ANN401 - raw stack data
    if isinstance(data, dict) and key not in data and _snake(key) not in data:
        raise ValueError(message)


def _snake(key: str) -> str:
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in key)
