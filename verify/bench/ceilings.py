"""Physical ceilings of a cell for the model and accelerator it claims: compute (prefill) and bandwidth (decode).

Why beside the compute check the sweep always made: a decode rate is bounded by memory bandwidth, not FLOP/s.
One stream of a 12B QAT on an L4 reads ~11 GB of weights per token, so 300 GB/s allows ~27 tokens/s; a file
claiming 218 tokens/s for one user measured something else (another model, a cache, a relabelled file). The
ceilings are computed from the claims the record makes through the catalog and the latency model at every peak
reached (serving/latency.py), so a results file whose model was relabelled is judged against the model it now
claims. What a record claims:

- the model: the catalog model its name names; else the size it states (``model_params``: ``--model-params``,
  or the size a served name spells, ``my-12b-finetune``), as the catalog model of that size when there is one,
  else as a dense model of that many parameters at 4 bits a weight (the lightest any Gemma variant reads). A
  served name that is no catalog id does not escape the ceiling: ``--model-params 12B`` is a claim too.
- the accelerator and how many of them shard the model (``accelerator``, ``accelerator_count``).
- speculative decoding only where the record shows it (``speculative_tokens``: the stack's ``--speculative-
  config``, or the draft tokens per draft the server's own counters showed during the cell). A record that
  does not say gets none: allowing the default drafter's every token accepted let a ceiling five times too
  high pass a stack without MTP.

And the claimed model must fit the claimed accelerators: the capacity planner (stacks/fit.py, `make matrix`'s
answer) with all of the accelerator's memory given to vLLM, the cell's prompt as the only sequence length and
every variant that runs there. A model that fits none is refused outright ("cannot be what it claims"); one
that fits decodes at most the sequences its KV cache holds at once, so the batch a ceiling allows is the lesser
of the cell's users and those sequences (a 31B on one L4 holds two 1K-token sequences, not 64).

Generous on purpose everywhere else: the lightest variant that runs, every peak reached, the whole memory.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from serving.catalog import CatalogModel, SupportStatus, catalog, find_checkpoint
from serving.latency import ModelCost, decode_ceiling_tokens_per_s, model_cost
from serving.planner import KvLayout
from serving.shapes import Accelerator, accelerator_facts
from serving.speed_facts import MissingPeakError, hardware_for
from serving.units import GB, GIB
from verify.bench.record_checks import CEILING_MARGIN as MARGIN
from verify.bench.results import CellRecord

# A stated size names a catalog model when it is within this share of the model's active parameters.
SIZE_MATCH = 0.1
# The fewest bytes a weight takes in any Gemma variant (QAT w4a16, NVFP4: 4 bits), for a size the catalog lacks.
LIGHTEST_BYTES_PER_PARAM = 0.5
# The planner is asked with all of the accelerators' memory for vLLM (`--gpu-memory-utilization` at its maximum).
ALL_MEMORY = 1.0
# The shortest sequence the planner is asked about: the least `vllm.maxModelLen` a stack takes (stacks/vllm.py);
# a shorter prompt fits wherever this does, with more sequences beside it (generous, again).
SHORTEST_SEQUENCE = 128
# How the loader words a refusal of the capacity planner (`<key>: capacity: ...`, stacks/capacity.py
# `capacity_problems`): the ones about memory.
_CAPACITY = "capacity:"
# What a platform of the results file is called in the shapes table.
_SHAPE_PLATFORM = {"cloud-run": "cloud-run", "tpu": "tpu-vm", "gke": "gke"}


@dataclass(frozen=True)
class Claim:
    """What a record says served it: the catalog model (None: a model of ``params`` the catalog does not hold),
    the accelerator and how many of them shard the model."""

    model: CatalogModel | None
    params: float | None
    accelerator: Accelerator
    chips: int
    platform: str | None = None

    def describe(self) -> str:
        return f"{self.what()} on {self.chips} x {self.accelerator}"

    def what(self) -> str:
        if self.model is not None:
            return self.model.id
        return f"a {(self.params or 0) / 1e9:g}B-parameter model (no catalog model of that size)"


def _catalog_model(name: str) -> CatalogModel | None:
    """The catalog model a served name or repo id names. Never its variant: a served name is chosen freely (the
    QAT checkpoint is often served as `gemma-4-12b-it`), so the ceiling takes the lightest variant."""
    found = find_checkpoint(name)
    if found is not None:
        return found[0]
    leaf = name.rstrip("/").rsplit("/", 1)[-1].lower()
    return next((model for model in catalog().values() if leaf.startswith(model.id)), None)


def _model_of_size(params: float) -> CatalogModel | None:
    """The catalog model whose active parameters ``params`` states (within ``SIZE_MATCH``), the nearest first."""
    near = [
        model
        for model in catalog().values()
        if abs(model.parameters.active - params) <= SIZE_MATCH * model.parameters.active
    ]
    return min(near, key=lambda model: abs(model.parameters.active - params), default=None)


def claim_of(record: CellRecord) -> Claim | None:
    """The record's claims, or None when they name no accelerator, no chip count (a GPU on Cloud Run is one;
    elsewhere the record must say) or no model: neither a catalog name nor a stated size."""
    if not record.accelerator:
        return None
    try:
        accelerator = Accelerator(record.accelerator)
    except ValueError:
        return None
    model = _catalog_model(record.model)
    params = record.model_params
    if model is None and params is not None:
        model = _model_of_size(params)
    if model is None and params is None:
        return None
    chips = record.accelerator_count
    if chips is None:
        if accelerator_facts(accelerator).family == "tpu" or record.platform == "gke":
            return None
        chips = 1
    return Claim(model, None if model is not None else params, accelerator, chips, record.platform)


def kv_layout(accelerator: str) -> KvLayout:
    """How vLLM lays out the KV cache on the accelerator: by its family in the shapes table, so every TPU
    generation gets the TPU layout (a name check once gave any TPU but one the GPU layout)."""
    return KvLayout.TPU if accelerator_facts(accelerator).family == "tpu" else KvLayout.VLLM_HYBRID


@dataclass(frozen=True)
class _Candidate:
    """One variant that can serve the claim: its decode arithmetic, and the sequences its KV cache holds (None:
    not known, no bound)."""

    cost: ModelCost
    sequences: int | None


@dataclass(frozen=True)
class _Candidates:
    found: tuple[_Candidate, ...]
    # Why none can serve it (the claimed model does not fit the claimed accelerators), when none can.
    refusal: str | None = None


@functools.cache
def _catalog_candidates(
    model_id: str, accelerator: Accelerator, chips: int, platform: str | None, context: int
) -> _Candidates:
    """The catalog model's variants that run on the accelerators, each with the sequences of ``context`` tokens
    it holds when the planner finds a shape for the claim (stacks/fit.py); a refusal when none fits."""
    from stacks.fit import SHAPES, Workload, fit  # noqa: PLC0415 - the planner, only for a claim to check

    model = catalog()[model_id]
    runs = [name for name, v in model.variants.items() if v.support(accelerator).status is not SupportStatus.NO]
    if not runs:
        return _Candidates((), f"no variant of {model_id} runs on {accelerator}")
    layout = kv_layout(accelerator)
    costs = {name: model_cost(model, name, kv_cache_dtype="fp8", tensor_parallel=chips, layout=layout) for name in runs}
    shapes = [shape for shape in SHAPES if shape.accelerator is accelerator and shape.chips == chips]
    shapes.sort(key=lambda shape: shape.platform != _SHAPE_PLATFORM.get(platform or "", ""))
    if not shapes:  # no shape of the table to plan on: the weights alone are the bound
        return _Candidates(tuple(_Candidate(cost, None) for cost in costs.values()))
    workload = Workload(
        context_tokens=max(context, SHORTEST_SEQUENCE - 1), output_tokens=1, gpu_memory_utilization=ALL_MEMORY
    )
    fits = {name: fit(model, name, shapes[0], workload) for name in runs}
    # Only the planner's own verdict (capacity) refuses a variant; a stack it could not write for another reason
    # says nothing about memory, and that variant stays, unbounded.
    found = tuple(
        _Candidate(costs[name], answer.sequences if answer.fits else None)
        for name, answer in fits.items()
        if answer.fits or _CAPACITY not in (answer.why_not or "")
    )
    if found:
        return _Candidates(found)
    lightest = min(runs, key=lambda name: costs[name].step_weight_bytes(1))
    why = fits[lightest].why_not or "the planner refused it"
    return _Candidates((), f"no variant of {model_id} fits {chips} x {accelerator} ({lightest}: {why})")


def _sized_candidates(params: float, accelerator: Accelerator, chips: int) -> _Candidates:
    """A model the catalog lacks, of ``params`` parameters: dense, 4 bits a weight, no KV read (generous)."""
    weights = params * LIGHTEST_BYTES_PER_PARAM
    memory = chips * accelerator_facts(accelerator).memory_gib * GIB
    what = f"{params / 1e9:g}B parameters at 4 bits"
    if weights > memory:
        return _Candidates(
            (),
            f"{what} are {weights / GB:.1f} GB of weights, more than the {memory / GB:.1f} GB of "
            f"{chips} x {accelerator}",
        )
    return _Candidates((_Candidate(ModelCost(what, params, weights), None),))


def _candidates(claim: Claim, context: int) -> _Candidates:
    if claim.model is not None:
        return _catalog_candidates(claim.model.id, claim.accelerator, claim.chips, claim.platform, context)
    return _sized_candidates(claim.params or 0.0, claim.accelerator, claim.chips)


def speculative_tokens(record: CellRecord) -> int:
    """Draft tokens a step may add: what the record shows (its stack's, or its server's counters), else none."""
    return record.speculative_tokens or 0


@dataclass(frozen=True)
class DecodeCeiling:
    """The most output tokens/s the claimed model and accelerator allow: one stream, and the cell's batch. With
    ``refusal`` the claim cannot be true at all (the model does not fit the accelerators): every rate is over."""

    claim: Claim
    per_stream: float
    total: float
    basis: str
    refusal: str | None = None

    def problem(self, output_throughput: float | None, mean_tpot_ms: float | None, concurrency: int) -> str | None:
        """Why the measured rates cannot be this model on this accelerator, or None."""
        if self.refusal is not None:
            return f"{self.claim.describe()} cannot serve at all: {self.refusal}"
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
    """The decode ceilings for what ``record`` claims (None: it claims no model, accelerator or count, or the
    accelerator has no peaks recorded)."""
    claim = claim_of(record)
    if claim is None:
        return None
    prompt = round(record.actual_context or record.requested_context)
    candidates = _candidates(claim, prompt)
    if candidates.refusal is not None:
        return DecodeCeiling(claim, 0.0, 0.0, candidates.refusal, candidates.refusal)
    try:
        hardware = hardware_for(claim.accelerator, claim.chips)
    except MissingPeakError:
        return None
    context = prompt + record.max_tokens / 2
    accepted = 1 + speculative_tokens(record)
    users = max(record.max_concurrency, 1)

    def batch(candidate: _Candidate) -> int:
        return users if candidate.sequences is None else max(1, min(users, candidate.sequences))

    def total(candidate: _Candidate) -> float:
        return decode_ceiling_tokens_per_s(candidate.cost, hardware, batch(candidate), context)

    stream = max(
        candidates.found, key=lambda candidate: decode_ceiling_tokens_per_s(candidate.cost, hardware, 1, context)
    )
    widest = max(candidates.found, key=total)
    held = "" if batch(widest) == users else f", {batch(widest)} sequences of {prompt:,} tokens at once in its KV cache"
    basis = (
        f"{stream.cost.name} reads {stream.cost.step_weight_bytes(1) / GB:.1f} GB a step at {hardware.chips} x "
        f"{hardware.bandwidth / 1e9:,.0f} GB/s{held}"
        + (f", up to {accepted} tokens a step with speculative decoding" if accepted > 1 else "")
    )
    return DecodeCeiling(
        claim,
        accepted * decode_ceiling_tokens_per_s(stream.cost, hardware, 1, context),
        accepted * total(widest),
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
