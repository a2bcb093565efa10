"""Will this stack fit? The capacity planner applied to one stack's settings, for the loader and preview.

Why here: the planner (serving/planner.py) is pure arithmetic; this module decides what each platform
means for it (the accelerator's memory, vLLM's block size and in-flight tokens, the runtime overhead we
assume) and which checkpoint profile a stack serves, so that a stack that cannot fit fails at load with
the planner's numbers, and one that will queue says so in the preview and in `pulumi preview`/`up`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from pydantic import Field, model_validator

from serving.input_files import inside
from serving.lora import lora_buffer_bytes
from serving.model_profiles import ConfigError, builtin_profile, builtin_profile_names, find_builtin_profile
from serving.model_profiles import profile_from_config_file as _profile_from_config_file
from serving.planner import (
    DOCS,
    CapacityPlan,
    KvLayout,
    ModelProfile,
    PlanInputs,
    Severity,
    UnsupportedKvDtypeError,
    gib,
    plan_capacity,
    render_table,
)
from serving.shapes import Accelerator, ResolvedShape
from serving.units import GB, GIB
from stacks.base import SettingsModel
from stacks.bounds import MAX_CONTEXT_TOKENS, MAX_PARAMETERS, MAX_RUNTIME_OVERHEAD_GIB, MAX_WEIGHT_BYTES
from stacks.calibration import calibrate
from stacks.catalog_checks import Served, catalog_warnings, served_checkpoint

if TYPE_CHECKING:
    from serving.lora import LoraLimits
    from stacks.adapters import AdapterSettings
    from stacks.model_settings import ModelSettings
    from stacks.vllm import VllmSettings

# Assumed memory the engine keeps besides weights and KV cache (activation peak at the batch size,
# CUDA graphs, CUDA context and libraries). An ESTIMATE: vLLM measures it at start-up; ours errs on the
# side of a smaller KV budget. Per accelerator: every GPU or chip of a tensor-parallel group keeps its own
# (its CUDA context, graphs and activations), so a replica over N of them keeps N times as much. Override
# per stack with capacity.runtimeOverheadGib (also per accelerator).
GPU_RUNTIME_OVERHEAD_GIB_PER_GPU = 2.0
TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP = 1.0

# vLLM's KV block size per platform: 16 on CUDA (CacheConfig.DEFAULT_BLOCK_SIZE); 256 on TPU, which is
# consistent with the users' TPU v6e-4 figure (242,944 tokens = 949 blocks of 256).
GPU_BLOCK_SIZE = 16
TPU_BLOCK_SIZE = 256

# Async scheduling is on by default on CUDA in vLLM 0.32 and keeps two batches in flight.
ASYNC_CONCURRENT_BATCHES = 2


DEFAULT_REQUEST_TOKENS = 512


class CapacitySettings(SettingsModel):
    """How to plan a stack's capacity when the defaults do not fit its checkpoint."""

    # A built-in profile name (serving/model_profiles) or the path of a checkpoint's config.json
    # (relative to the Pulumi project). Unset: the built-in profile named like model.path's last part.
    profile: str | None = None
    # The same for the speculative drafter (unset: named like vllm.speculative.drafter).
    drafter_profile: str | None = None
    # The checkpoint's weight bytes, when `profile` is a config.json with no index or safetensors beside it.
    weight_bytes: int | None = Field(default=None, ge=1, le=MAX_WEIGHT_BYTES)
    # Or the weights as a parameter count and the bits each is stored in (an estimate, shown as one).
    parameters: int | None = Field(default=None, ge=1, le=MAX_PARAMETERS)
    bits_per_parameter: float | None = Field(default=None, gt=0, le=32)
    # Replaces the assumed runtime overhead (GiB per accelerator).
    runtime_overhead_gib: float | None = Field(default=None, ge=0, le=MAX_RUNTIME_OVERHEAD_GIB)
    # The stack's stated workload: tokens (prompt + output) of a typical request. The plan WARNS when
    # vllm.maxNumSeqs requests of this size cannot all hold their KV cache at once (vLLM then preempts
    # under ordinary traffic); full-length sequences that do not all fit are only an INFO. 512 is a chat
    # turn of a few hundred tokens of prompt and answer (docs/capacity-planning.md).
    request_tokens: int = Field(default=DEFAULT_REQUEST_TOKENS, ge=1, le=MAX_CONTEXT_TOKENS)

    @model_validator(mode="after")
    def _one_weight_figure(self) -> Self:
        if (self.parameters is None) != (self.bits_per_parameter is None):
            raise ValueError("capacity.parameters and capacity.bitsPerParameter go together (weights = their product)")
        if self.parameters is not None and self.weight_bytes is not None:
            raise ValueError("capacity.weightBytes: give the weights once, as weightBytes or as parameters x bits")
        return self

    @property
    def stated_weight_bytes(self) -> int | None:
        """The checkpoint's weight bytes as the stack states them, if it does."""
        if self.parameters is not None and self.bits_per_parameter is not None:
            return round(self.parameters * self.bits_per_parameter / 8)
        return self.weight_bytes


class CapacityUnknownError(ValueError):
    """The planner cannot judge this stack (unknown checkpoint, unmodelled kv-cache dtype)."""


@dataclass(frozen=True)
class StackCapacity:
    """A stack's capacity verdict: the plan, or why there is none, and what was assumed."""

    plan: CapacityPlan | None
    unknown_reason: str | None
    # What the platform is assumed to do (in-flight tokens, runtime overhead, TPU layout).
    assumptions: tuple[str, ...] = ()
    # What the model catalog cannot vouch for (a variant nobody has shown running on this accelerator).
    catalog_notices: tuple[str, ...] = ()

    @property
    def errors(self) -> list[str]:
        return [finding.message for finding in self.plan.errors] if self.plan else []

    @property
    def warnings(self) -> list[str]:
        """What is wrong for the stack's stated workload (printed as WARNINGs by preview and `pulumi up`)."""
        if self.plan is None:
            return [f"capacity not checked: {self.unknown_reason}"]
        return [finding.message for finding in self.plan.warnings] + list(self.catalog_notices)

    @property
    def infos(self) -> list[str]:
        """Figures worth knowing that are normal (how many full-length requests fit at once)."""
        return [finding.message for finding in self.plan.infos] if self.plan else []

    def as_dict(self) -> dict[str, object]:
        """The `capacity` key of the FORMAT=json preview."""
        if self.plan is None:
            return {"checked": False, "reason": self.unknown_reason, "warnings": self.warnings}
        profiles = [self.plan.inputs.model, *([self.plan.inputs.drafter] if self.plan.inputs.drafter else [])]
        return {
            "checked": True,
            **self.plan.as_dict(),
            "warnings": self.warnings,
            "weightSources": {profile.name: profile.weight_source for profile in profiles},
            "assumptions": list(self.assumptions),
        }

    def lines(self) -> list[str]:
        """The text preview's section: the planner's table, what it assumed, its verdicts."""
        lines = ["Capacity (will it fit?):"]
        if self.plan is None:
            return [*lines, f"  not checked: {self.unknown_reason}", ""]
        lines += [f"  {line}" for line in render_table(self.plan).splitlines()]
        lines += [f"  WARNING: {notice}" for notice in self.catalog_notices]
        lines += [f"  assumed: {assumption}" for assumption in self.assumptions]
        estimated = [
            f"{profile.name} {', '.join(note.split(':', 1)[0] for note in profile.estimates)}"
            for profile in (self.plan.inputs.model, self.plan.inputs.drafter)
            if profile is not None and profile.estimates
        ]
        if estimated:
            lines.append(
                f"  estimated: {'; '.join(estimated)} (not read from the checkpoint: how each estimate is made is "
                "in the FORMAT=json plan under capacity.weightSources)"
            )
        lines.append(f"  how to read this: {DOCS}")
        return [*lines, ""]


def _resolve_profile(
    reference: str | None, fallback_path: str, *, key: str, weight_bytes: int | None, root: Path
) -> ModelProfile:
    builtin = reference is None or reference in builtin_profile_names()
    if builtin and weight_bytes is not None:
        raise ValueError(
            f"capacity.weightBytes: applies only to a checkpoint profiled from its config.json ({key}: path/to/"
            "config.json); this stack's checkpoint has a built-in profile whose weights are known, so the figure would "
            "be ignored: remove it (or correct the catalog with its source)"
        )
    if reference is None:
        profile = find_builtin_profile(fallback_path)
        if profile is None:
            raise CapacityUnknownError(
                f"{fallback_path!r} is neither a catalog checkpoint nor a built-in profile; set {key} to the "
                "checkpoint's config.json"
            )
        return profile
    if reference in builtin_profile_names():
        return builtin_profile(reference)
    # Only a file of the project: a path outside it (or a symlink out of it) would have the preview, `pulumi up`
    # and CI read, and their errors quote, any file the stack file names.
    path = inside(root, Path(reference))
    if path is None:
        raise ValueError(
            f"{key}: {reference!r} is outside the project folder ({root}); copy the checkpoint's config.json into "
            "the project (e.g. profiles/<checkpoint>/config.json) and name it relative to Pulumi.yaml"
        )
    if not path.exists():
        raise ValueError(
            f"{key}: {reference!r} is neither a built-in profile ({', '.join(builtin_profile_names())}) "
            "nor a config.json file"
        )
    index = path.parent / "model.safetensors.index.json"
    if weight_bytes is None and index.exists() and inside(root, index) is None:
        raise ValueError(f"{key}: the model.safetensors.index.json beside {reference!r} links outside the project")
    try:
        return _profile_from_config_file(path, weight_bytes=weight_bytes)
    except ConfigError as error:
        raise ValueError(f"{key}: {error}") from error


@dataclass(frozen=True)
class PlatformCapacity:
    """What a platform brings to the plan: its memory per accelerator and what vLLM does there."""

    memory_gib: float
    accelerator_label: str
    layout: KvLayout
    block_size: int
    overhead_gib: float
    # Tokens the sliding-window layers hold besides the window (in-flight batches).
    in_flight_tokens: int
    assumptions: tuple[str, ...]


def cloud_run_capacity(shape: ResolvedShape, vllm: VllmSettings, capacity: CapacitySettings) -> PlatformCapacity:
    """CUDA GPUs (a Cloud Run instance's, a GKE machine type's): vLLM's hybrid KV layout, blocks of 16, async
    scheduling's two batches in flight, overhead per GPU of the tensor-parallel group (one on Cloud Run)."""
    override = capacity.runtime_overhead_gib
    per_gpu = GPU_RUNTIME_OVERHEAD_GIB_PER_GPU if override is None else override
    batched = vllm.batched_tokens
    if batched is None:
        batched = shape.chip.default_batched_tokens
    in_flight = batched * ASYNC_CONCURRENT_BATCHES
    return PlatformCapacity(
        memory_gib=shape.memory_gib,
        accelerator_label=shape.display_name,
        layout=KvLayout.VLLM_HYBRID,
        block_size=GPU_BLOCK_SIZE,
        overhead_gib=per_gpu * vllm.tensor_parallel_size,
        in_flight_tokens=in_flight,
        assumptions=(
            (
                f"sliding-window layers also hold {in_flight:,} in-flight tokens (--max-num-batched-tokens "
                f"{batched:,} x 2 batches: async scheduling, on by default in vLLM 0.32 on CUDA)"
            ),
        ),
    )


def tpu_capacity(shape: ResolvedShape, vllm: VllmSettings, capacity: CapacitySettings) -> PlatformCapacity:
    """TPU chips (a TPU VM slice or a GKE TPU machine type): every layer keeps every token, blocks of 256,
    overhead per chip of the slice."""
    override = capacity.runtime_overhead_gib
    per_chip = TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP if override is None else override
    return PlatformCapacity(
        memory_gib=shape.memory_gib,
        accelerator_label=shape.display_name,
        layout=KvLayout.TPU,
        block_size=TPU_BLOCK_SIZE,
        overhead_gib=per_chip * vllm.tensor_parallel_size,
        in_flight_tokens=0,  # tpu-inference keeps every token in every Gemma 4 layer: nothing slides out
        assumptions=("TPU layout: every layer stores every token (tpu-inference disables Gemma 4's sliding window)",),
    )


def gke_capacity(shape: ResolvedShape, vllm: VllmSettings, capacity: CapacitySettings) -> PlatformCapacity:
    """A GKE node's accelerators (its machine type, resolved): vLLM there does what it does on the same chip
    elsewhere."""
    if shape.is_tpu:
        return tpu_capacity(shape, vllm, capacity)
    return cloud_run_capacity(shape, vllm, capacity)


TEXT_ONLY_FLAG = "--language-model-only"


class StackSettings(Protocol):
    """The blocks of a stack (any variant) the planner reads: its accelerator, model, vLLM, capacity and
    adapter settings. A protocol, not the settings union, so the planner the settings call does not import
    them back (a circle)."""

    @property
    def accelerator(self) -> Accelerator: ...
    @property
    def model(self) -> ModelSettings: ...
    @property
    def vllm(self) -> VllmSettings: ...
    @property
    def capacity(self) -> CapacitySettings: ...
    @property
    def adapters(self) -> tuple[AdapterSettings, ...]: ...
    @property
    def lora_limits(self) -> LoraLimits | None: ...
    def capacity_platform(self) -> PlatformCapacity: ...


def _text_only(profile: ModelProfile, settings: StackSettings) -> ModelProfile:
    """A text-only stack (`--language-model-only`) does not load the catalog model's vision/audio towers."""
    if TEXT_ONLY_FLAG not in settings.vllm.extra_args:
        return profile
    served = served_checkpoint(settings.model)
    if not isinstance(served, Served) or served.model.towers is None:
        return profile
    towers = served.model.towers
    return dataclasses.replace(
        profile,
        weight_bytes=profile.weight_bytes - towers.weight_bytes,
        weight_source=(
            f"{profile.weight_source}; minus the {towers.what} ({towers.weight_bytes / GB:.2f} GB), which "
            f"{TEXT_ONLY_FLAG} does not load"
        ),
    )


def _lora_reservation(settings: StackSettings, assumptions: list[str]) -> int:
    """GPU bytes vLLM sets aside for LoRA slots (serving/lora.py), added to the runtime overhead; 0 without
    adapters. A checkpoint outside the catalog has no layer sizes here: the plan says it is not counted."""
    limits = settings.lora_limits
    if limits is None:
        return 0
    served = served_checkpoint(settings.model)
    if not isinstance(served, Served):
        assumptions.append(
            f"LoRA: {limits.gpu_slots} slots of rank {limits.max_rank} are NOT counted (the model is not in the "
            "catalog, so its layer sizes are unknown here); lower vllm.gpuMemoryUtilization to leave room"
        )
        return 0
    reserved = lora_buffer_bytes(served.model.text_config, limits)
    assumptions.append(
        f"LoRA: {gib(reserved)} for {limits.gpu_slots} GPU slots of rank {limits.max_rank} over every linear layer "
        f"(an estimate, counted with the runtime overhead); {len(settings.adapters)} adapter(s) declared, "
        f"{limits.cpu_slots} kept in host memory"
    )
    return reserved


def plan_inputs(settings: StackSettings, *, root: Path) -> tuple[PlanInputs, tuple[str, ...]]:
    """The planner's inputs for a stack, and the assumptions behind them (shown in the preview)."""
    inputs, assumptions = _stated_inputs(settings, root=root)
    capacity = settings.capacity
    calibrated, notes = calibrate(
        inputs,
        assumptions,
        root=root,
        accelerator=settings.accelerator,
        checkpoint=settings.model.path,
        overhead_given=capacity.runtime_overhead_gib is not None,
    )
    return calibrated, tuple(notes)


def stated_weight_bytes(settings: StackSettings, *, root: Path) -> int:
    """The weights (model and drafter) the catalog or the stack's profile states, before any calibration
    record: what `verify memory --save` checks a measured "Model loading took" against."""
    inputs, _ = _stated_inputs(settings, root=root)
    return inputs.model.weight_bytes + (inputs.drafter.weight_bytes if inputs.drafter is not None else 0)


def _stated_inputs(settings: StackSettings, *, root: Path) -> tuple[PlanInputs, list[str]]:
    capacity = settings.capacity
    model = _resolve_profile(
        capacity.profile,
        settings.model.path,
        key="capacity.profile",
        weight_bytes=capacity.stated_weight_bytes,
        root=root,
    )
    model = _text_only(model, settings)
    drafter = None
    speculative = settings.vllm.speculative
    if speculative is not None and (speculative.drafter or capacity.drafter_profile):
        drafter = _resolve_profile(
            capacity.drafter_profile,
            speculative.drafter or "",
            key="capacity.drafterProfile",
            weight_bytes=None,
            root=root,
        )
    vllm = settings.vllm
    platform = settings.capacity_platform()
    override = capacity.runtime_overhead_gib
    assumptions = list(platform.assumptions)
    source = "capacity.runtimeOverheadGib" if override is not None else "an estimate"
    assumptions.append(f"runtime overhead {gib(platform.overhead_gib * GIB)} besides weights and KV cache ({source})")
    lora_bytes = _lora_reservation(settings, assumptions)
    inputs = PlanInputs(
        model=model,
        drafter=drafter,
        max_model_len=vllm.max_model_len,
        max_num_seqs=vllm.max_num_seqs,
        kv_cache_dtype=vllm.kv_cache_dtype,
        model_dtype_bits=32 if vllm.dtype == "float32" else 16,
        device_memory_bytes=round(platform.memory_gib * GIB),
        gpu_memory_utilization=vllm.gpu_memory_utilization,
        tensor_parallel_size=vllm.tensor_parallel_size,
        runtime_overhead_bytes=round(platform.overhead_gib * GIB) + lora_bytes,
        layout=platform.layout,
        block_size=platform.block_size,
        in_flight_tokens=platform.in_flight_tokens,
        accelerator_label=platform.accelerator_label,
        workload_tokens=capacity.request_tokens,
    )
    return inputs, assumptions


def assess_stack(settings: StackSettings, *, root: Path | None = None) -> StackCapacity:
    """Plan a stack's capacity. ValueError (naming the key) when its capacity settings are unusable."""
    try:
        inputs, assumptions = plan_inputs(settings, root=root or Path.cwd())
        notices = tuple(catalog_warnings(settings.model, accelerator=settings.accelerator))
        return StackCapacity(
            plan=plan_capacity(inputs), unknown_reason=None, assumptions=assumptions, catalog_notices=notices
        )
    except (CapacityUnknownError, UnsupportedKvDtypeError) as error:
        return StackCapacity(plan=None, unknown_reason=str(error), assumptions=())


# The stack key each planner verdict is about, so the loader's message names it.
FINDING_KEYS = {
    "weights-exceed-memory": "model.path",
    "sequence-does-not-fit": "vllm.maxModelLen",
    "context-above-model-limit": "vllm.maxModelLen",
    "batch-does-not-fit": "vllm.maxNumSeqs",
}


def capacity_problems(capacity: StackCapacity, *, model_key: str = "model.path") -> list[str]:
    """The loader's error lines (`<key>: capacity: <planner message>`) for a stack that cannot fit."""
    if capacity.plan is None:
        return [
            (
                f"capacity.profile: the planner cannot judge whether this stack fits ({capacity.unknown_reason}); a "
                "GPU or TPU stack is never planned unchecked: serve a catalog model (model.id, model.variant, "
                "model.revision; `make matrix` lists them), or set capacity.profile to the checkpoint's config.json "
                "with capacity.weightBytes (or capacity.parameters and capacity.bitsPerParameter)"
            )
        ]
    return [
        f"{model_key if finding.code == 'weights-exceed-memory' else FINDING_KEYS.get(finding.code, 'vllm')}: "
        f"capacity: {finding.message}"
        for finding in capacity.plan.findings
        if finding.severity is Severity.ERROR
    ]
