"""LoRA adapters a stack serves on its base model (`adapters:`) and the slots vLLM keeps for them (`lora:`).

Why here, checked before anything exists: an adapter trained on another base, of a rank vLLM was not
started for, or targeting modules vLLM cannot adapt, is refused by vLLM only when the first request names
it, minutes into production. Each adapter names its source (pinned like the weights), the base it was
trained on and its rank and target modules as its `adapter_config.json` states them; the import job
checks the downloaded file against these (job_scripts/import_weights.py) and refuses a mismatch.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from serving.adapter_versions import default_version, is_version_label, versioned_name
from serving.lora import MAX_GPU_SLOTS, LoraLimits, derive_lora_limits, rank_choices
from stacks.base import SettingsModel
from stacks.weights import WeightSource

# An adapter's name is the `model` clients send and, with its version, a folder of the bucket: no '/', no
# '..', no '@' (the version separator), no spaces, and short enough for its import job's name.
_ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,20}[a-z0-9]$")

# Bounds, each with its reason. Adapters: each is an import job and a run in the plan, and more adapters than
# the most GPU slots a stack asks vLLM for (serving/lora.py) would evict each other on every replica.
MAX_ADAPTERS = MAX_GPU_SLOTS
# Probes per adapter: each is two requests (adapter and base) at every check and promotion.
MAX_PROBES = 8

# The linear layers of a Gemma decoder layer that vLLM can carry LoRA weights for (PEFT's names), and PEFT's
# shorthand for all of them. Embeddings, lm_head and the vision/audio towers are not adapted by vLLM 0.32.
ADAPTABLE_MODULES = frozenset({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
ALL_LINEAR = "all-linear"


class AdapterProbe(SettingsModel):
    """A prompt `gemma-verify adapters check` sends under the adapter's name, with what the answer must hold."""

    prompt: str = Field(min_length=1, max_length=4000)
    # A substring the adapter's answer must contain (case-sensitive); unset: only "differs from the base".
    expect: str | None = Field(default=None, min_length=1, max_length=400)


class AdapterSettings(SettingsModel):
    """One LoRA adapter: its name, where it comes from, and what it was trained as."""

    name: str
    source: WeightSource
    # This version's label (`support-bot@v4`, the folder adapters/support-bot@v4/); a new source needs a new
    # one. Unset: derived from the source (serving/adapter_versions.py `default_version`).
    version: str | None = None
    # The base it was trained on: a catalog model id (gemma-4-12b-it) or a Hugging Face repo id.
    base: str = Field(min_length=1, max_length=200)
    # `r` in its adapter_config.json.
    rank: int = Field(ge=1, le=512)
    # `target_modules` in its adapter_config.json (PEFT names), or all-linear.
    target_modules: tuple[str, ...] = (ALL_LINEAR,)
    probes: tuple[AdapterProbe, ...] = Field(default=(), max_length=MAX_PROBES)

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not is_version_label(value):
            raise ValueError(
                f"{value!r} is not a version label: 1-20 lowercase letters, digits, '.' and '-', starting and ending "
                "with a letter or digit (it names the folder adapters/NAME@VERSION)"
            )
        return value

    @property
    def version_label(self) -> str:
        """The version this entry imports: the declared one, else one derived from the source."""
        return self.version or default_version(self.source.uri, self.source.revision)

    @property
    def versioned_name(self) -> str:
        """The name this version answers under before and after promotion (`support-bot@v4`)."""
        return versioned_name(self.name, self.version_label)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _ADAPTER_NAME.match(value):
            raise ValueError(
                f"{value!r} is not an adapter name: 2-22 lowercase letters, digits and '-', starting with a letter "
                "(clients send it as the model name, and it names the adapter's bucket folder)"
            )
        return value

    @field_validator("target_modules")
    @classmethod
    def _modules(cls, modules: tuple[str, ...]) -> tuple[str, ...]:
        if not modules:
            raise ValueError(
                f"name at least one module; allowed: {ALL_LINEAR} or {', '.join(sorted(ADAPTABLE_MODULES))}"
            )
        unknown = sorted(set(modules) - ADAPTABLE_MODULES - {ALL_LINEAR})
        if unknown:
            raise ValueError(
                f"{unknown} cannot carry LoRA weights in vLLM on Gemma; allowed: {ALL_LINEAR} or "
                f"{', '.join(sorted(ADAPTABLE_MODULES))}"
            )
        return modules


class LoraSlots(SettingsModel):
    """vLLM's LoRA sizes; unset: derived from the adapters (serving/lora.py), in powers of two."""

    # Adapters one batch may mix on the GPU (--max-loras).
    gpu_slots: int | None = Field(default=None, ge=1, le=64)
    # Adapters kept in host memory, ready to swap in (--max-cpu-loras); at least gpuSlots.
    cpu_slots: int | None = Field(default=None, ge=1, le=1024)
    # The largest rank vLLM accepts (--max-lora-rank); one of vLLM's choices.
    max_rank: int | None = None

    @field_validator("max_rank")
    @classmethod
    def _rank_choice(cls, value: int | None) -> int | None:
        if value is not None and value not in rank_choices():
            raise ValueError(
                f"{value} is not a --max-lora-rank of vLLM; allowed: {', '.join(map(str, rank_choices()))}"
            )
        return value

    @model_validator(mode="after")
    def _cpu_holds_gpu(self) -> Self:
        if self.gpu_slots is not None and self.cpu_slots is not None and self.cpu_slots < self.gpu_slots:
            raise ValueError(f"lora.cpuSlots ({self.cpu_slots}) must be at least lora.gpuSlots ({self.gpu_slots})")
        return self


def adapter_problems(
    adapters: tuple[AdapterSettings, ...], slots: LoraSlots, *, served_name: str, model_ids: frozenset[str]
) -> list[str]:
    """Too many adapters, duplicate names, names that clients could never reach or that pass for another
    model, and adapters above a stated rank, each naming its key."""
    problems: list[str] = []
    if len(adapters) > MAX_ADAPTERS:
        problems.append(
            f"adapters: {len(adapters)} declared, at most {MAX_ADAPTERS} a stack (each is an import job, and more "
            "than the largest --max-loras would evict each other on every replica); split them across stacks"
        )
    seen: dict[str, int] = {}
    for index, adapter in enumerate(adapters):
        if adapter.name in seen:
            problems.append(f"adapters[{index}].name: {adapter.name!r} is also adapters[{seen[adapter.name]}]'s name")
        seen.setdefault(adapter.name, index)
        if adapter.name == served_name.lower():
            problems.append(
                f"adapters[{index}].name: {adapter.name!r} is the served model's name (model.servedName); requests "
                "for it reach the base model, never the adapter"
            )
        elif adapter.name in model_ids:
            problems.append(
                f"adapters[{index}].name: {adapter.name!r} is a Gemma catalog model's id; an adapter answering under "
                "it would pass for that model"
            )
        if slots.max_rank is not None and adapter.rank > slots.max_rank:
            problems.append(
                f"adapters[{index}].rank: {adapter.rank} is above lora.maxRank {slots.max_rank}; raise lora.maxRank "
                "(a new serving revision) or serve an adapter of a lower rank"
            )
    return problems


def lora_limits(adapters: tuple[AdapterSettings, ...], slots: LoraSlots) -> LoraLimits | None:
    """The LoRA sizes vLLM starts with; None when the stack serves no adapter."""
    if not adapters:
        return None
    return derive_lora_limits(
        [adapter.rank for adapter in adapters],
        gpu_slots=slots.gpu_slots,
        cpu_slots=slots.cpu_slots,
        max_rank=slots.max_rank,
    )
