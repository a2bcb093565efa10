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

from serving.lora import LoraLimits, derive_lora_limits, rank_choices
from stacks.base import SettingsModel
from stacks.weights import WeightSource

# An adapter's name is the `model` clients send and a folder of the bucket: no '/', no '..', no spaces,
# and short enough for the import job's service-account id (`<stack>-imp-a-<name>`, 30 characters).
_ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,20}[a-z0-9]$")

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
    # The base it was trained on: a catalog model id (gemma-4-12b-it) or a Hugging Face repo id.
    base: str = Field(min_length=1, max_length=200)
    # `r` in its adapter_config.json.
    rank: int = Field(ge=1, le=512)
    # `target_modules` in its adapter_config.json (PEFT names), or all-linear.
    target_modules: tuple[str, ...] = (ALL_LINEAR,)
    probes: tuple[AdapterProbe, ...] = ()

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


def adapter_problems(adapters: tuple[AdapterSettings, ...], slots: LoraSlots) -> list[str]:
    """Duplicate names and adapters above a stated rank, each naming its key."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, adapter in enumerate(adapters):
        if adapter.name in seen:
            problems.append(f"adapters[{index}].name: {adapter.name!r} is also adapters[{seen[adapter.name]}]'s name")
        seen.setdefault(adapter.name, index)
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
