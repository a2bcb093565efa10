"""The Gemma 4 model catalog: every model, its published variants, and what each needs, as data.

Why data: which checkpoint to serve, in which precision, on which accelerator, is knowledge that
vllm-project/recipes (`models/Google/gemma-4-*.yaml`) and the model cards keep as data too; here it is
one JSON file per model (`serving/catalog/models/`), each fact with its source, the day it was read,
and whether it was confirmed at that source. The stack loader resolves `model: {id, variant,
revision}` through it, the capacity planner reads each variant's weights and architecture from it,
and `make matrix` and the MCP `fit` tool compare every entry on every accelerator shape.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Iterator
from functools import cache, cached_property
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from serving.model_profiles.architecture import architecture_from_config
from serving.model_profiles.files import ProfileFile, Weights
from serving.planner import Architecture
from serving.shapes import Accelerator, accelerator_facts

__all__ = [
    "CatalogModel",
    "Drafter",
    "Support",
    "Variant",
    "catalog",
    "catalog_model",
    "find_checkpoint",
    "pins_of",
    "repos_pinning",
]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Cited(_Data):
    """Where a fact comes from, when it was read, and whether it was confirmed at that source."""

    source: str
    read: datetime.date
    # False: read from a copy, inferred, or disputed; the data never presents it as checked.
    confirmed: bool = True
    note: str = ""


class Pin(Cited):
    """A commit of a checkpoint's repo that a public deployment, benchmark or download manifest pins."""

    revision: str = Field(pattern=r"^[0-9a-f]{40}$")


class Parameters(Cited):
    total: int = Field(gt=0)
    active: int = Field(gt=0)


class Towers(Cited):
    """The vision/audio encoders: loaded unless the stack is text-only (`--language-model-only`)."""

    parameters: int = Field(ge=0)
    what: str
    text_only_args: tuple[str, ...] = ()

    @property
    def weight_bytes(self) -> int:
        """Towers stay bf16 in every published variant (recipe variant descriptions)."""
        return self.parameters * 2


class TpuFacts(Cited):
    min_chips: int = Field(ge=1)


class ContextLength(Cited):
    tokens: int = Field(gt=0)


class SupportStatus(enum.StrEnum):
    YES = "yes"
    NO = "no"
    UNCONFIRMED = "unconfirmed"


# How an accelerator serves a precision (serving/data/shapes.json) as the catalog's verdict.
_SUPPORT_BY_HOW = {
    "native": SupportStatus.YES,
    "weight-only": SupportStatus.YES,
    "unsupported": SupportStatus.NO,
    "unconfirmed": SupportStatus.UNCONFIRMED,
}


class Support(_Data):
    """Whether a variant runs on an accelerator, and why (or why not)."""

    status: SupportStatus
    why: str = ""


class Drafter(_Data):
    """An MTP `-assistant` drafter: its repo, its architecture (KV-shared), weights, recommended tokens."""

    repo: str
    num_speculative_tokens: int = Field(ge=1)
    # The range upstream recommends, as written there (e.g. "4-8").
    recommended: str
    config: dict[str, Any]
    config_source: str
    weights: Weights
    estimates: tuple[str, ...] = ()
    source: str
    read: datetime.date
    confirmed: bool = True
    # Commits of the repo seen pinned in public (a stack may pin any commit; these are known ones).
    pins: tuple[Pin, ...] = ()

    @property
    def leaf(self) -> str:
        return self.repo.rsplit("/", 1)[-1]

    def profile_file(self) -> ProfileFile:
        return ProfileFile(
            name=self.leaf,
            checkpoint=self.repo,
            config=self.config,
            config_source=self.config_source,
            weights=self.weights,
            estimates=self.estimates,
        )


class Precision(enum.StrEnum):
    """How a variant's decoder weights are stored."""

    BF16 = "bf16"
    INT4 = "int4"
    FP8 = "fp8"
    NVFP4 = "nvfp4"


class Variant(_Data):
    """One published checkpoint of a model: repo, precision, weights, where it runs, what vLLM needs."""

    repo: str
    precision: Precision
    # The checkpoint's `quantization_config.quant_method` (None: unquantized weights).
    quant_method: str | None
    dtype: str
    weights: Weights
    estimates: tuple[str, ...] = ()
    # Where sources disagree about this variant, and which reading the data keeps.
    conflicts: tuple[str, ...] = ()
    runs_on: dict[Accelerator, Support]
    # Upstream's arguments for this variant (recipe `extra_args`), and per accelerator (`hardware_overrides`).
    vllm_args: tuple[str, ...] = ()
    vllm_args_by_accelerator: dict[Accelerator, tuple[str, ...]] = Field(default_factory=dict)
    env_by_accelerator: dict[Accelerator, dict[str, str]] = Field(default_factory=dict)
    # The repo of the MTP drafter upstream pairs with this variant.
    drafter: str
    source: str
    read: datetime.date
    confirmed: bool = True
    notes: tuple[str, ...] = ()
    # Commits of the repo seen pinned in public (a stack may pin any commit; these are known ones).
    pins: tuple[Pin, ...] = ()

    @property
    def leaf(self) -> str:
        """The checkpoint's directory name in the model bucket (the repo's name part)."""
        return self.repo.rsplit("/", 1)[-1]

    def support(self, accelerator: Accelerator) -> Support:
        """Whether the variant runs on the accelerator: what the catalog records for the pair, else what the
        shapes table says the accelerator does with weights of this precision (so a new accelerator needs
        no edit of every variant), else unconfirmed."""
        recorded = self.runs_on.get(accelerator)
        if recorded is not None:
            return recorded
        served = accelerator_facts(accelerator).weight_format(self.precision.value)
        if served is None:
            return Support(status=SupportStatus.UNCONFIRMED, why="not recorded")
        how = f"{self.precision.value} weights {served.how}" + (f" ({served.kernel})" if served.kernel else "")
        return Support(
            status=_SUPPORT_BY_HOW[served.how],
            why=f"{how} on {accelerator}: {served.source} (serving/data/shapes.json)",
        )


class CatalogModel(_Data):
    """One Gemma 4 model: architecture (config.json), towers, drafters and its published variants."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    title: str
    kind: str = Field(pattern=r"^(dense|moe)$")
    parameters: Parameters
    config: dict[str, Any]
    config_source: Cited
    towers: Towers | None
    tpu: TpuFacts
    context_length: ContextLength
    default_drafter: str
    drafters: dict[str, Drafter]
    variants: dict[str, Variant]

    def variant(self, name: str) -> Variant:
        found = self.variants.get(name)
        if found is None:
            raise KeyError(f"{name!r} is not a variant of {self.id}; allowed: {', '.join(self.variants)}")
        return found

    def profile_file(self, name: str) -> ProfileFile:
        """The capacity planner's profile of one variant: this model's config with the variant's weights."""
        variant = self.variant(name)
        config = dict(self.config)
        if variant.quant_method:
            config["quantization_config"] = {"quant_method": variant.quant_method}
        return ProfileFile(
            name=variant.leaf,
            checkpoint=variant.repo,
            config=config,
            config_source=self.config_source.source,
            weights=variant.weights,
            estimates=variant.estimates,
        )

    @cached_property
    def architecture(self) -> Architecture:
        """The planner's reading of ``config``, parsed once (the model is frozen): the load model asks for it
        for every candidate an advise run weighs."""
        return architecture_from_config(self.config)

    @property
    def text_config(self) -> dict[str, Any]:
        nested = self.config.get("text_config")
        return nested if isinstance(nested, dict) else self.config


def _load() -> dict[str, CatalogModel]:
    models: dict[str, CatalogModel] = {}
    for entry in sorted(resources.files(__package__).joinpath("models").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            model = CatalogModel.model_validate_json(entry.read_text(encoding="utf-8"))
            if entry.name != f"{model.id}.json":
                raise ValueError(f"serving/catalog/models/{entry.name}: its id is {model.id!r}; name the file after it")
            models[model.id] = model
    return models


@cache
def catalog() -> dict[str, CatalogModel]:
    """Every catalog model by id (read once)."""
    return _load()


def catalog_model(model_id: str) -> CatalogModel:
    """A model by id; the error lists the ids there are."""
    models = catalog()
    if model_id not in models:
        raise KeyError(f"{model_id!r} is not a catalog model; allowed: {', '.join(models)}")
    return models[model_id]


def repos_pinning(revision: str) -> dict[str, Pin]:
    """Every catalog repo (variant or drafter) that records `revision` as one of its pins, with the pin."""
    found: dict[str, Pin] = {}
    for checkpoint in _checkpoints():
        for pin in checkpoint.pins:
            if pin.revision == revision.lower():
                found[checkpoint.repo] = pin
    return found


def pins_of(repo: str) -> tuple[Pin, ...]:
    """The commits the catalog records as pinned in public for one repo (variant or drafter)."""
    for checkpoint in _checkpoints():
        if checkpoint.repo == repo:
            return checkpoint.pins
    return ()


def _checkpoints() -> Iterator[Variant | Drafter]:
    """Every repo the catalog knows: each model's variants and drafters."""
    for model in catalog().values():
        yield from model.variants.values()
        yield from model.drafters.values()


def find_checkpoint(name: str) -> tuple[CatalogModel, str | None, Drafter | None] | None:
    """Which catalog entry a repo id or bucket directory names (case-insensitive, by its last part):
    (model, variant name, None) for a target, (model, None, drafter) for a drafter; None if neither."""
    leaf = name.rstrip("/").rsplit("/", 1)[-1].lower()
    for model in catalog().values():
        for variant_name, variant in model.variants.items():
            if variant.leaf.lower() == leaf:
                return model, variant_name, None
        for drafter in model.drafters.values():
            if drafter.leaf.lower() == leaf:
                return model, None, drafter
    return None
