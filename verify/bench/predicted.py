"""The latency model's estimate beside each measured cell: what `compare` prints under its verdicts.

Why beside, not instead: a measured cell is the truth about that run; the estimate (docs/advisor.md) says
what the model, accelerator and load the file claims should give. Far apart, one of them is wrong: the
estimate's stated error, or the run (a relabelled file, a cold cache, a client too far away). The estimate
is computed for what the record claims (verify/bench/ceilings.py reads the claims): the catalog model its
name names, the variant when the name is a checkpoint's, else the lightest that runs there (said so), its
accelerator and chips, its prompt and output tokens, and its load (users, or the open loop's rate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from serving.catalog import CatalogModel, SupportStatus, find_checkpoint
from serving.latency import ModelCost, model_cost
from serving.planner import KvLayout
from serving.shapes import accelerator_facts
from serving.speed_facts import MissingPeakError
from serving.units import GIB
from stacks.estimate import Estimate, estimate, replica_of
from verify.bench.ceilings import Claim, claim_of
from verify.bench.results import CellRecord
from verify.numbers import readable

# The share of an accelerator's memory weights may take and still leave a KV cache (vLLM's default utilisation).
USABLE = 0.9
# (record field, heading): what the model estimates that a cell records. The p95 TTFT is shown when an SLO
# names it, as compare's own columns are (the SLO's percentile is the one shown).
_PAIRS: tuple[tuple[str, str], ...] = (
    ("request_throughput", "req/s"),
    ("mean_ttft_ms", "mean TTFT ms"),
    ("mean_tpot_ms", "mean TPOT ms"),
)
_SLO_PAIRS: dict[str, str] = {"p95_ttft_ms": "p95 TTFT ms"}


def _variant(record: CellRecord, claim: Claim, model: CatalogModel) -> tuple[str, str] | None:
    """(variant, how it was chosen): the checkpoint's own when the served name is one whose weights fit the
    claimed accelerators, else the variant that reads the fewest bytes a step among those that run there (a served
    name is chosen freely: the QAT checkpoint is often served as `gemma-4-12b-it`, the bf16 repo's name)."""
    found = find_checkpoint(record.model)
    if found is not None and found[1] is not None:
        weights = sum(part.bytes for part in model.variant(found[1]).weights.parts)
        if weights < USABLE * claim.chips * accelerator_facts(claim.accelerator).memory_gib * GIB:
            return found[1], "the served checkpoint's"
    layout = KvLayout.TPU if accelerator_facts(claim.accelerator).family == "tpu" else KvLayout.VLLM_HYBRID
    costs: dict[str, ModelCost] = {
        name: model_cost(model, name, kv_cache_dtype="fp8", tensor_parallel=claim.chips, layout=layout)
        for name, variant in model.variants.items()
        if variant.support(claim.accelerator).status is not SupportStatus.NO
    }
    if not costs:
        return None
    lightest = min(costs, key=lambda name: costs[name].step_weight_bytes(1))
    return lightest, "assumed: the served name does not say; the lightest that runs there"


@dataclass(frozen=True)
class CellEstimate:
    """One measured cell and the model's estimate for what it claims, field by field."""

    record: CellRecord
    claim: Claim
    model: CatalogModel
    variant: str
    variant_basis: str
    estimate: Estimate
    slo_keys: tuple[str, ...] = ()

    def values(self) -> dict[str, tuple[float | None, float | None]]:
        """heading -> (measured, estimated)."""
        at = self.estimate.at
        estimated = {
            "request_throughput": at.request_rate,
            "mean_ttft_ms": at.ttft_mean_s * 1000,
            "p95_ttft_ms": at.ttft_p95_s * 1000,
            "mean_tpot_ms": at.tpot_s * 1000,
        }
        pairs = [*_PAIRS, *((key, heading) for key, heading in _SLO_PAIRS.items() if key in self.slo_keys)]
        return {heading: (getattr(self.record, field), estimated[field]) for field, heading in pairs}

    def line(self, label: str) -> str:
        """``8192 x 50 in A: req/s 2.31 (est 2.10), mean TTFT ms 820 (est 905), ...``"""
        if self.estimate.at.saturated:
            shown = f"the estimate saturates ({self.estimate.at.why})"
        else:
            shown = ", ".join(
                f"{heading} {readable(measured)} (est {readable(estimated)})"
                for heading, (measured, estimated) in self.values().items()
                if measured is not None and estimated is not None
            )
        return f"{label}: {shown}; as {self.claim.describe()} {self.variant} ({self.variant_basis})"


def estimate_cell(record: CellRecord, slo_keys: Sequence[str] = ()) -> CellEstimate | None:
    """The estimate for a measured cell's claims; None when it claims no catalog model (a size alone has no
    architecture to estimate with), accelerator and count, or the accelerator has no peaks recorded."""
    claim = claim_of(record)
    if claim is None or claim.model is None or not record.measured:
        return None
    model = claim.model
    chosen = _variant(record, claim, model)
    if chosen is None:
        return None
    variant, how = chosen
    try:
        replica = replica_of(model, variant, claim.accelerator, claim.chips, batch_cap=record.max_concurrency)
    except MissingPeakError:
        return None
    prompt = round(record.actual_context or record.requested_context)
    if record.request_rate:
        at = estimate(replica, prompt_tokens=prompt, output_tokens=record.max_tokens, rate=record.request_rate)
    else:
        at = estimate(replica, prompt_tokens=prompt, output_tokens=record.max_tokens, users=record.max_concurrency)
    return CellEstimate(record, claim, model, variant, how, at, tuple(slo_keys))


def estimate_lines(labelled: Sequence[tuple[str, CellRecord | None]], slo_keys: Sequence[str] = ()) -> list[str]:
    """One line per measured cell with an estimate, then the estimate's basis and stated error once."""
    found = [
        (label, cell)
        for label, record in labelled
        if record is not None and (cell := estimate_cell(record, slo_keys)) is not None
    ]
    if not found:
        return []
    bases = dict.fromkeys(cell.estimate.basis for _, cell in found)
    return [
        *(cell.line(label) for label, cell in found),
        *(f"estimate basis: {basis}" for basis in bases),
        (
            "each estimate is for the cell's claimed model, accelerator, tokens and load, its batch cap "
            f"the cell's users (the server's KV capacity is not in the file); {found[0][1].estimate.error}"
        ),
    ]
