"""MTP speculative decoding for one catalog variant: its drafter's arithmetic and how often its drafts are kept.

Why its own module: the latency model (serving/latency.py ``Speculation``) needs the acceptance, and the
acceptance is a measured fact of the served checkpoints (vLLM's `vllm:spec_decode_*` counters), or, where none
was measured, a default per kind of target with its source (serving/data/mtp-acceptance.json). Both advise
(MTP on or off, and how many draft tokens, as candidates) and the write-up figures ask here.
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from serving.catalog import CatalogModel
from serving.latency import Speculation, acceptance_from_counters
from serving.model_cost import drafter_cost


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class AcceptanceDefault(_Data):
    """The per-position acceptance for targets of these precisions, with its source."""

    target_precisions: tuple[str, ...]
    per_position: float = Field(ge=0, lt=1)
    source: str
    read: datetime.date
    confirmed: bool = True
    note: str = ""


class AcceptanceTable(_Data):
    about: str
    defaults: tuple[AcceptanceDefault, ...]


@functools.cache
def acceptance_table() -> AcceptanceTable:
    text = resources.files("serving").joinpath("data", "mtp-acceptance.json").read_text(encoding="utf-8")
    return AcceptanceTable.model_validate_json(text)


@dataclass(frozen=True)
class Counters:
    """vLLM's speculative-decoding counters over a run: drafts, and the drafted tokens accepted, at the draft
    length they were measured with, and where they come from."""

    drafts: float
    accepted: float
    draft_tokens: int
    source: str


def acceptance_of(model: CatalogModel, variant: str, counters: Counters | None = None) -> tuple[float, str]:
    """(per-position acceptance, its source) for ``variant``'s drafter: measured counters when given, else the
    default for the target's precision."""
    if counters is not None and counters.drafts > 0:
        alpha = acceptance_from_counters(counters.drafts, counters.accepted, counters.draft_tokens)
        return alpha, f"measured: {counters.source}"
    precision = model.variant(variant).precision.value
    for entry in acceptance_table().defaults:
        if precision in entry.target_precisions:
            confirmed = "" if entry.confirmed else " (unconfirmed)"
            return entry.per_position, f"default for {precision} targets{confirmed}: {entry.source}"
    raise KeyError(f"serving/data/mtp-acceptance.json has no default for {precision} targets")


def speculation_for(
    model: CatalogModel,
    variant: str,
    draft_tokens: int,
    *,
    kv_cache_dtype: str = "fp8",
    tensor_parallel: int = 1,
    counters: Counters | None = None,
) -> Speculation:
    """MTP with ``draft_tokens`` tokens drafted a step by the drafter the catalog pairs with ``variant``."""
    drafter = model.variant(variant).drafter
    alpha, source = acceptance_of(model, variant, counters)
    return Speculation(
        draft_tokens=draft_tokens,
        acceptance=alpha,
        drafter=drafter_cost(model.id, drafter, kv_cache_dtype=kv_cache_dtype, tensor_parallel=tensor_parallel),
        source=source,
    )
