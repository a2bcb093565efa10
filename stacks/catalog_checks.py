"""Refuse, at load, a stack whose settings contradict the catalog checkpoint it serves.

Why: each of these used to preview cleanly and fail only after a rollout (or never, while billing): a bf16
checkpoint with `quantization: compressed-tensors` left in, the 12B's `-assistant` drafter on a 31B
target, an NVFP4 checkpoint on an L4, a QAT checkpoint on a TPU, a 31B on one v6e chip. A stack names a
catalog checkpoint the short way (`model.id`/`variant`) or the long way (its Hugging Face repo, or a
bucket path named like it); either way it gets the same checks, each naming the key and what would work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from serving.catalog import CatalogModel, Drafter, SupportStatus, Variant, catalog_model, find_checkpoint
from serving.shapes import Accelerator, accelerator_facts, short_name, tpu_slices

if TYPE_CHECKING:
    from stacks.model_settings import ModelSettings
    from stacks.vllm import VllmSettings

# dtypes a variant may run in besides its own: `auto` reads it from the checkpoint; an unquantized bf16
# checkpoint may be upcast to float32 (twice the memory, which the planner counts).
_UPCASTS = {"bfloat16": ("float32",)}


@dataclass(frozen=True)
class Served:
    """The catalog checkpoint a stack serves, and the key that names it in the stack file."""

    model: CatalogModel
    variant_name: str
    variant: Variant
    key: str


def served_checkpoint(model: ModelSettings) -> Served | Drafter | None:
    """The catalog entry `model` names (short form, Hugging Face repo, or bucket path); a Drafter when it
    names an MTP drafter as the model to serve; None when it is not in the catalog."""
    if model.id and model.variant:
        found = catalog_model(model.id)
        return Served(found, model.variant, found.variant(model.variant), "model.variant")
    named = []
    if model.source is not None and model.source.hugging_face is not None:
        named.append((model.source.hugging_face.repo, "model.source.huggingFace.repo"))
    named.append((model.path, "model.path"))
    for name, key in named:
        hit = find_checkpoint(name)
        if hit is not None:
            entry, variant_name, drafter = hit
            if drafter is not None:
                return drafter
            assert variant_name is not None
            return Served(entry, variant_name, entry.variants[variant_name], key)
    return None


def _drafter_named(model: ModelSettings, vllm: VllmSettings) -> tuple[str, str] | None:
    """The drafter a stack names (repo or bucket path) and the key naming it."""
    if model.drafter_source is not None and model.drafter_source.hugging_face is not None:
        return model.drafter_source.hugging_face.repo, "model.drafterSource.huggingFace.repo"
    speculative = vllm.speculative
    if speculative is not None and speculative.drafter:
        return speculative.drafter, "vllm.speculative.drafter"
    return None


def catalog_problems(model: ModelSettings, vllm: VllmSettings, *, accelerator: Accelerator, chips: int) -> list[str]:
    """Every way the stack contradicts the catalog checkpoint it serves (empty when none, or not a catalog one)."""
    served = served_checkpoint(model)
    if isinstance(served, Drafter):
        return [
            (
                f"model.path: {served.repo} is an MTP drafter (an -assistant checkpoint that drafts for a target), "
                "not a model to serve; serve its target and name the drafter in vllm.speculative"
            )
        ]
    problems = _drafter_problems(model, vllm, served)
    if served is None:
        return problems
    variant, name = served.variant, f"{served.model.id} {served.variant_name}"
    support = variant.support(accelerator)
    label = accelerator_facts(accelerator).display_name
    if support.status is SupportStatus.NO:
        can = [
            v for v, entry in served.model.variants.items() if entry.support(accelerator).status is SupportStatus.YES
        ]
        problems.append(
            f"{served.key}: {name} ({variant.precision} weights) cannot run on {label}: {support.why}; variants of "
            f"{served.model.id} that can: {', '.join(can) or 'none'}"
        )
    slices = tpu_slices(accelerator)  # empty unless the accelerator is a TPU generation
    if slices and chips < served.model.tpu.min_chips:
        enough = [name for name, count in slices.items() if count >= served.model.tpu.min_chips]
        needs = f"{served.model.tpu.min_chips} {short_name(accelerator)} chips ({served.model.tpu.source})"
        problems.append(
            f"tpu.acceleratorType: {served.model.id} needs at least {needs}; this slice has {chips}: "
            f"use {' or '.join(enough)}"
        )
    upcasts = _UPCASTS.get(variant.dtype, ()) if variant.quant_method is None else ()
    allowed = ("auto", variant.dtype, *upcasts)
    if vllm.dtype not in allowed:
        problems.append(
            f"vllm.dtype: {vllm.dtype!r} contradicts {name}, whose weights are {variant.dtype} ({variant.precision}); "
            f"allowed: {', '.join(allowed)}"
        )
    return problems


def _drafter_problems(model: ModelSettings, vllm: VllmSettings, served: Served | None) -> list[str]:
    named = _drafter_named(model, vllm)
    if named is None:
        return []
    drafter_name, key = named
    hit = find_checkpoint(drafter_name)
    if hit is None:
        return []
    owner, variant_name, drafter = hit
    if drafter is None:
        return [
            (
                f"{key}: {owner.variants[variant_name or ''].repo} is a model to serve, not an MTP drafter; Gemma 4 "
                f"MTP drafts with the target's -assistant checkpoint ({owner.default_drafter} for {owner.id})"
            )
        ]
    if served is None or owner.id == served.model.id:
        return []
    mine = served.model.drafters[served.variant.drafter]
    return [
        (
            f"{key}: {drafter.repo} drafts for {owner.id}, not for {served.model.id}, the model this stack serves "
            f"(its tokens would be rejected); use {mine.repo} (upstream recommends {mine.recommended} speculative "
            "tokens)"
        )
    ]


def catalog_warnings(model: ModelSettings, *, accelerator: Accelerator) -> list[str]:
    """What the catalog cannot vouch for: a variant nobody has shown running on this accelerator, and weights
    the accelerator serves weight-only by a path nobody has timed (NVFP4 on Ada or Hopper: no FP4 tensor
    cores, so the speed follows neither the FP4 nor the bf16 figures)."""
    served = served_checkpoint(model)
    if not isinstance(served, Served):
        return []
    label = accelerator_facts(accelerator).display_name
    name = f"{served.model.id} {served.variant_name}"
    notices = []
    support = served.variant.support(accelerator)
    if support.status is SupportStatus.UNCONFIRMED:
        notices.append(
            f"{name} on {label} is unconfirmed: {support.why} (serving/catalog/models/{served.model.id}.json)"
        )
    served_as = accelerator_facts(accelerator).weight_format(served.variant.precision.value)
    if served_as is not None and served_as.how == "weight-only" and not served_as.confirmed:
        notices.append(
            f"{name} on {label}: {served.variant.precision.value} weights served weight-only ({served_as.kernel}); "
            f"speed unconfirmed: no benchmark of this path is recorded (serving/data/shapes.json)"
        )
    return notices
