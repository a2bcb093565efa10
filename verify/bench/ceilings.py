"""Physical ceilings of a cell for the model and accelerator it claims: compute (prefill) and bandwidth (decode).

Why beside the compute check the sweep always made: a decode rate is bounded by memory bandwidth, not FLOP/s.
One stream of a 12B QAT on an L4 reads ~11 GB of weights per token, so 300 GB/s allows ~27 tokens/s; a file
claiming 218 tokens/s for one user measured something else (another model, a cache, a relabelled file). The
ceilings are computed from the claims the record makes (its model name, its accelerator and how many of them)
through the catalog and the latency model at every peak reached (serving/latency.py), so a results file whose
model was relabelled is judged against the model it now claims. Generous on purpose: the lightest variant of
the model that can run on the accelerator, and speculative decoding's best case (every draft token accepted)
when the record does not say speculative decoding was off.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from serving.accelerators import Accelerator
from serving.catalog import CatalogModel, SupportStatus, catalog, find_checkpoint
from serving.latency import ModelCost, decode_ceiling_tokens_per_s, model_cost
from serving.planner import GB, KvLayout
from serving.speed_facts import MissingPeakError, hardware_for
from verify.bench.record_checks import CEILING_MARGIN as MARGIN
from verify.bench.results import CellRecord


@dataclass(frozen=True)
class Claim:
    """What a record says served it: the catalog model (and variant, when its name says), the accelerator and
    how many of them shard the model."""

    model: CatalogModel
    variant: str | None
    accelerator: Accelerator
    chips: int

    def describe(self) -> str:
        what = f"{self.model.id}" + (f" {self.variant}" if self.variant else "")
        return f"{what} on {self.chips} x {self.accelerator.value}"


def _catalog_model(name: str) -> CatalogModel | None:
    """The catalog model a served name or repo id names. Never its variant: a served name is chosen freely (the
    QAT checkpoint is often served as `gemma-4-12b-it`), so the ceiling takes the lightest variant."""
    found = find_checkpoint(name)
    if found is not None:
        return found[0]
    leaf = name.rstrip("/").rsplit("/", 1)[-1].lower()
    return next((model for model in catalog().values() if leaf.startswith(model.id)), None)


def claim_of(record: CellRecord) -> Claim | None:
    """The record's claims, or None when they do not name a catalog model, an accelerator and a chip count
    (a GPU on Cloud Run is one; elsewhere the record must say)."""
    if not record.accelerator:
        return None
    try:
        accelerator = Accelerator(record.accelerator)
    except ValueError:
        return None
    model = _catalog_model(record.model)
    if model is None:
        return None
    chips = record.accelerator_count
    if chips is None:
        if accelerator is Accelerator.TPU_V6E or record.platform == "gke":
            return None
        chips = 1
    return Claim(model, None, accelerator, chips)


@functools.cache
def _lightest(model_id: str, variant: str | None, accelerator: Accelerator, chips: int) -> ModelCost | None:
    """The variant (the named one, or the one reading the fewest bytes a step among those that can run on the
    accelerator) as the decode ceiling sees it; None when none can run there."""
    model = catalog()[model_id]
    layout = KvLayout.TPU if accelerator is Accelerator.TPU_V6E else KvLayout.VLLM_HYBRID
    names = (
        [variant]
        if variant
        else [name for name, v in model.variants.items() if v.support(accelerator).status is not SupportStatus.NO]
    )
    costs = [model_cost(model, name, kv_cache_dtype="fp8", tensor_parallel=chips, layout=layout) for name in names]
    return min(costs, key=lambda cost: cost.step_weight_bytes(1), default=None)


def _speculative(record: CellRecord, model: CatalogModel) -> int:
    """Draft tokens a step may add: the record's, or (unknown) the default drafter's, all accepted."""
    if record.speculative_tokens is not None:
        return record.speculative_tokens
    drafter = model.drafters.get(model.default_drafter)
    return drafter.num_speculative_tokens if drafter is not None else 0


@dataclass(frozen=True)
class DecodeCeiling:
    """The most output tokens/s the claimed model and accelerator allow: one stream, and the cell's batch."""

    claim: Claim
    per_stream: float
    total: float
    basis: str

    def problem(self, output_throughput: float | None, mean_tpot_ms: float | None, concurrency: int) -> str | None:
        """Why the measured rates cannot be this model on this accelerator, or None."""
        stream = 1000.0 / mean_tpot_ms if mean_tpot_ms else None
        if stream is not None and stream > MARGIN * self.per_stream:
            return (
                f"{stream:.0f} tokens/s a stream is above the bandwidth ceiling: {self.claim.describe()} decodes at "
                f"most {self.per_stream:.0f} ({self.basis})"
            )
        if output_throughput is not None and output_throughput > MARGIN * self.total:
            return (
                f"{output_throughput:.0f} output tokens/s at {concurrency} users is above the bandwidth ceiling: "
                f"{self.claim.describe()} decodes at most {self.total:.0f} ({self.basis})"
            )
        return None


def decode_ceiling_of(record: CellRecord) -> DecodeCeiling | None:
    """The decode ceilings for what ``record`` claims (None: it names no catalog model, accelerator or count)."""
    claim = claim_of(record)
    if claim is None:
        return None
    cost = _lightest(claim.model.id, claim.variant, claim.accelerator, claim.chips)
    if cost is None:
        return DecodeCeiling(claim, 0.0, 0.0, f"no variant of {claim.model.id} runs on {claim.accelerator.value}")
    try:
        hardware = hardware_for(claim.accelerator, claim.chips)
    except MissingPeakError:
        return None
    context = (record.actual_context or record.requested_context) + record.max_tokens / 2
    accepted = 1 + _speculative(record, claim.model)
    batch = max(record.max_concurrency, 1)
    basis = (
        f"{cost.name} reads {cost.step_weight_bytes(1) / GB:.1f} GB a step at {hardware.chips} x "
        f"{hardware.bandwidth / 1e9:,.0f} GB/s"
        + (f", up to {accepted} tokens a step with speculative decoding" if accepted > 1 else "")
    )
    return DecodeCeiling(
        claim,
        accepted * decode_ceiling_tokens_per_s(cost, hardware, 1, context),
        accepted * decode_ceiling_tokens_per_s(cost, hardware, batch, context),
        basis,
    )


def ceiling_problem(record: CellRecord) -> str | None:
    """Why a measured cell cannot be what it claims, or None: over the compute ceiling the sweep recorded, or
    over the decode ceilings of the model and accelerator the record names now (a relabelled file included)."""
    if not record.measured:
        return None
    if record.exceeds_ceiling:
        return "above its physical ceiling (recorded when measured): see its warnings"
    decode = decode_ceiling_of(record)
    if decode is None:
        return None
    problem = decode.problem(record.output_throughput, record.mean_tpot_ms, record.max_concurrency)
    return None if problem is None else f"above its physical ceiling: {problem}; not the model or accelerator it claims"
