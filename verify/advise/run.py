"""`advise` as a function: ``run_advise(AdviseOptions) -> AdviseReport``.

For every catalog model x variant x offer (verify/advise/offers.py) the constraints allow: does it fit (the
matrix's answer, `stacks.fit`: the stack loader and the capacity planner, with the stated workload as the
request size), how many requests of that size its KV cache holds (the batch cap), and then the fewest
replicas at which the latency model (serving/latency.py) predicts the SLO holds at the stated load. Rows are
ranked by what they cost a month; every number says whether it is measured or estimated, and from what.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from preview.stack_file import project_root
from serving.catalog import CatalogModel, SupportStatus, catalog, catalog_model
from serving.latency import AtLoad, Replica, Requests, at_rate, decode_step, prefill_seconds, with_users
from serving.pricing import HourlyPrice
from serving.shapes import ResolvedShape
from serving.speculation import Counters
from serving.speed_records import SpeedRecord
from stacks.estimate import basis_of, host_vcpus_of, replica_of, stated_error
from stacks.fit import Fit, Workload, fit
from verify.advise import adapter_fit
from verify.advise.batch import BatchRun, plan_run, start_seconds
from verify.advise.batch import caveat as batch_caveat
from verify.advise.keep_running import cold_starts, restart_gap, spot_risk
from verify.advise.measured import Cell, Verdict, measured_replica_counts, verdict
from verify.advise.offers import Offer, offers
from verify.advise.options import HOURS_PER_MONTH, AdviseOptions
from verify.advise.quality import below_floor, best_per_model, one_per_deployment, quality_fields, with_versus
from verify.advise.records import trusted_records
from verify.advise.report import UNCONFIRMED_MARK, AdviseReport, Basis, Exclusion, Row
from verify.advise.think_time import with_think_time

# The share of requests within the p95: goodput counts them.
WITHIN_P95 = 0.95
EXAMPLES = 3
REFUSED_SHOWN = 5
COST_SPLIT = (
    "the hour's cost split by engine time: prefill's share of compute to input tokens, the rest to output "
    "tokens, each over its tokens/s at this load"
)


@dataclass(frozen=True)
class Candidate:
    """One model variant on one offer that fits, as the load model sees it."""

    model: CatalogModel
    variant: str
    offer: Offer
    replica: Replica
    max_model_len: int
    caveats: tuple[str, ...] = ()
    # Chips one vLLM replica shards over, and replicas a billed unit holds (a GKE node: its GPUs / TP).
    tensor_parallel: int = 1
    replicas_per_unit: int = 1
    # Whether a public source shows this variant running on this accelerator (the catalog's support entry).
    support_confirmed: bool = True
    # MTP draft tokens a step (0: off).
    speculative_tokens: int = 0

    @property
    def label(self) -> str:
        mtp = f" +MTP-{self.speculative_tokens}" if self.speculative_tokens else ""
        return f"{self.model.id} {self.variant}{mtp} on {self.offer.shape.name}"


def _refusal_kind(message: str) -> str:
    """The few words a refusal is counted under (one line per kind)."""
    if "adapters" in message:
        return adapter_fit.CANNOT_SERVE
    if "cannot run on" in message:
        return "the variant does not run on the accelerator"
    if "weights need" in message or "weights alone" in message:
        return "the weights do not fit the accelerator's memory"
    if "needs at least" in message and "chips" in message:
        return "the model needs a larger TPU slice"
    if "sequence" in message or "KV" in message:
        return "the KV cache cannot hold one request of this size"
    return "refused by the stack loader"


class _Excluded:
    def __init__(self) -> None:
        self.by_reason: dict[str, list[str]] = {}

    def add(self, reason: str, what: str) -> None:
        self.by_reason.setdefault(reason, []).append(what)

    def summary(self) -> tuple[Exclusion, ...]:
        return tuple(
            Exclusion(reason=reason, count=len(whats), examples=tuple(whats[:EXAMPLES]))
            for reason, whats in sorted(self.by_reason.items(), key=lambda item: -len(item[1]))
        )


@functools.lru_cache(maxsize=4096)
def _catalog_fit(model_id: str, variant: str, shape: ResolvedShape, workload: Workload) -> Fit:
    """``fit`` of a catalog model, cached: its answer depends only on these frozen inputs and the package's
    read-only data (catalog, shapes, prices), and loading its stack is most of an advise run's time, asked again
    by every run in a long-lived caller (the MCP server) and by each constraint a user tries."""
    return fit(catalog_model(model_id), variant, shape, workload)


def candidates(
    options: AdviseOptions, excluded: _Excluded, records: list[SpeedRecord] | None = None
) -> list[Candidate]:
    """Every model x variant x offer the constraints allow that fits, with its replica model (MTP at the acceptance
    a speed record of the checkpoints measured, where one did)."""
    found_offers, ruled_out = offers(
        platforms=options.platforms, region=options.region, provisioning=options.provisioning
    )
    for shape, why in ruled_out:
        excluded.add("ruled out by the constraints", f"{shape}: {why}")
    # The longest request decides max-model-len and how many fit the KV cache (the mean, how fast they go).
    longest_prompt, longest_output = options.longest
    workload = Workload(
        context_tokens=longest_prompt,
        output_tokens=longest_output,
        kv_cache_dtype=options.kv_cache_dtype,
        reused_tokens=min(options.reused_tokens, longest_prompt),
        distinct_prefixes=options.distinct_prefixes,
        adapter_ranks=options.adapters.ranks if options.adapters is not None else (),
    )
    found: list[Candidate] = []
    for model in catalog().values():
        if options.models and model.id not in options.models:
            continue
        under = below_floor(model.id, options.min_scores)
        if under is not None:
            excluded.add("below the quality floor", f"{model.id}: {under}")
            continue
        for variant in model.variants:
            if options.variants and variant not in options.variants:
                continue
            for offer in found_offers:
                answer = _catalog_fit(model.id, variant, offer.shape, workload)
                if not answer.fits or not answer.sequences:
                    excluded.add(_refusal_kind(answer.why_not or ""), f"{model.id} {variant} on {offer.shape.name}")
                    continue
                # A GKE node runs node GPUs / TP replicas side by side (the matrix's choice: the smallest TP that
                # fits); elsewhere one replica takes the whole shape.
                tensor_parallel = answer.tensor_parallel if offer.platform == "gke" else offer.shape.chips
                support = model.variant(variant).support(offer.shape.accelerator)
                caveats = tuple(answer.warnings)
                if support.status is SupportStatus.UNCONFIRMED and not any("unconfirmed" in w for w in caveats):
                    caveats = (f"support on {offer.shape.accelerator} unconfirmed: {support.why}", *caveats)
                if options.adapters is not None:
                    caveats = (*caveats, adapter_fit.caveat(options.adapters, model))
                for draft in _draft_lengths(model, variant, offer, options):
                    replica = replica_of(
                        model,
                        variant,
                        offer.shape.accelerator,
                        tensor_parallel,
                        batch_cap=answer.sequences,
                        kv_cache_dtype=options.kv_cache_dtype,
                        speculative_tokens=draft,
                        counters=measured_counters(records or [], model.id, variant) if draft else None,
                        host_vcpus=host_vcpus_of(offer.shape.name),
                        kv_sequences=float(answer.sequences),
                    )
                    if draft and not _drafts_pay(replica, options):
                        excluded.add("MTP would not speed up one stream's decode", f"{model.id} {variant} +MTP-{draft}")
                        continue
                    found.append(
                        Candidate(
                            model,
                            variant,
                            offer,
                            replica,
                            workload.sequence_tokens,
                            caveats + (_mtp_caveat(replica) if draft else ()),
                            tensor_parallel=tensor_parallel,
                            replicas_per_unit=offer.shape.chips // tensor_parallel,
                            support_confirmed=support.status is not SupportStatus.UNCONFIRMED,
                            speculative_tokens=draft,
                        )
                    )
    return found


def _draft_lengths(model: CatalogModel, variant: str, offer: Offer, options: AdviseOptions) -> tuple[int, ...]:
    """The MTP draft lengths to weigh: the options' where the catalog pairs the variant with a drafter, else off.
    TPUs have no MTP path in the project's vllm-tpu (vllm-project/tpu-inference ships no Gemma 4 drafter)."""
    drafter = model.drafters.get(model.variant(variant).drafter)
    if drafter is None or offer.shape.is_tpu:
        return (0,)
    return options.draft_tokens


def measured_counters(records: list[SpeedRecord], model: str, variant: str) -> Counters | None:
    """The speculative-decoding counters the project's speed records measured for these checkpoints, summed (the
    acceptance is the checkpoints' and the traffic's, not the shape's); None where none did."""
    found = [r for r in records if (r.model, r.variant) == (model, variant) and r.spec_decode_drafts]
    if not found:
        return None
    drafts = sum(r.spec_decode_drafts or 0.0 for r in found)
    accepted = sum(r.spec_decode_accepted or 0.0 for r in found)
    length = max(found, key=lambda r: r.spec_decode_drafts or 0.0).speculative_tokens
    return Counters(drafts, accepted, length, f"{len(found)} speed record(s), e.g. {found[0].cite()}")


def _drafts_pay(replica: Replica, options: AdviseOptions) -> bool:
    """Whether MTP makes one stream's decode faster at the workload's context: where it does not (a low acceptance,
    a compute-bound step), it cannot at any batch, and a slower decode only throttles a closed loop's prompts."""
    speculation = replica.speculation
    if speculation is None:
        return True
    context = options.prompt_tokens + options.output_tokens / 2
    model, hardware, efficiency = replica.model, replica.hardware, replica.efficiency
    step, tokens = decode_step(model, hardware, efficiency, 1, context, speculation)
    return step / tokens < decode_step(model, hardware, efficiency, 1, context)[0]


def _mtp_caveat(replica: Replica) -> tuple[str, ...]:
    speculation = replica.speculation
    if speculation is None:
        return ()
    text = (
        f"MTP-{speculation.draft_tokens} at {speculation.acceptance:.2f} acceptance a position "
        f"({speculation.tokens_per_step():.2f} tokens a step), {speculation.source[:160]}: measure it "
        "(`gemma-verify bench` records vllm:spec_decode_* counters) before relying on the gain"
    )
    return (text,)


def _requests(options: AdviseOptions, prompt_tokens: int | None = None) -> Requests:
    prompt = prompt_tokens or options.prompt_tokens
    return Requests(
        prompt, options.output_tokens, min(options.reused_tokens, prompt), max(options.distinct_prefixes, 1)
    )


def _state(candidate: Candidate, options: AdviseOptions, replicas: int) -> AtLoad:
    """The replica at its share of the load, for the mean request. With a length distribution the p95 TTFT
    is that of the p95 prompt: the waits at the mean, plus the longer prompt's own prefill."""
    requests = _requests(options)
    if options.users is not None and options.think_time_s > 0:
        state = with_think_time(candidate.replica, requests, options.users / replicas, options.think_time_s)
    elif options.users is not None:
        state = with_users(candidate.replica, requests, options.users / replicas)
    else:
        assert options.rate is not None
        state = at_rate(candidate.replica, requests, options.rate / replicas)
    tail = options.p95_prompt_tokens
    if state.saturated or tail <= options.prompt_tokens:
        return state
    replica = candidate.replica
    longer = prefill_seconds(
        replica.model,
        replica.hardware,
        replica.efficiency,
        tail,
        chunk=replica.batched_tokens,
        cached=replica.cached_tokens(_requests(options, tail), state.decode_batch),
    )
    mean = prefill_seconds(
        replica.model,
        replica.hardware,
        replica.efficiency,
        options.prompt_tokens,
        chunk=replica.batched_tokens,
        cached=state.cached_tokens,
    )
    return dataclasses.replace(state, ttft_p95_s=state.ttft_p95_s + max(longer - mean, 0.0))


def _meets(state: AtLoad, options: AdviseOptions, replicas: int) -> bool:
    slo = options.effective_slo
    if state.saturated:
        return False
    if slo.p95_ttft_ms is not None and state.ttft_p95_s * 1000 > slo.p95_ttft_ms:
        return False
    if slo.p95_tpot_ms is not None and state.tpot_s * 1000 > slo.p95_tpot_ms:
        return False
    return not (slo.goodput is not None and WITHIN_P95 * state.request_rate * replicas < slo.goodput)


# A replica's state at a load depends only on what the replica is, not on where it is rented: the same chips of
# the same accelerator serve the same way on Cloud Run, a TPU VM or a GKE node. Keyed so, one run computes each
# state once (a v6e-1 slice and a ct6e-standard-1t node, on-demand and spot, share theirs).
_StateKey = tuple[str, str, str, int, int, int, int, int]


def _state_key(candidate: Candidate, replicas: int) -> _StateKey:
    replica = candidate.replica
    return (
        candidate.model.id,
        candidate.variant,
        candidate.offer.shape.accelerator,
        candidate.tensor_parallel,
        replica.batch_cap,
        replica.batched_tokens,
        candidate.speculative_tokens,
        replicas,
    )


def fewest_replicas(
    candidate: Candidate, options: AdviseOptions, states: dict[_StateKey, AtLoad] | None = None
) -> tuple[int, AtLoad] | None:
    """The fewest replicas (up to the offer's and the options' limit) at which the SLO holds, by doubling then
    bisection (more replicas never hurt: each carries less of the load). ``states`` shares the states computed
    for the same replica on other offers."""
    limit = min(candidate.offer.max_replicas, options.max_replicas)
    known = {} if states is None else states

    def check(replicas: int) -> AtLoad:
        key = _state_key(candidate, replicas)
        if key not in known:
            known[key] = _state(candidate, options, replicas)
        return known[key]

    low, high = 0, 1
    while True:
        state = check(high)
        if _meets(state, options, high):
            break
        if high >= limit:
            return None
        low, high = high, min(high * 2, limit)
    best = (high, state)
    while high - low > 1:
        middle = (low + high) // 2
        state = check(middle)
        if _meets(state, options, middle):
            high, best = middle, (middle, state)
        else:
            low = middle
    return best


def _row(
    candidate: Candidate, replicas: int, state: AtLoad, options: AdviseOptions, run: BatchRun | None = None
) -> Row | str:
    """The ranked row, or why it has none (no price recorded). A batch ``run`` bills its units for the hours it
    runs, each run of the month; a created GKE cluster's fee and system node bill all month."""
    offer = candidate.offer
    price, fixed = offer.price(), offer.fixed_price()
    if price.usd_per_hour is None:
        return f"no price: {price.missing}"
    if fixed is not None and fixed.usd_per_hour is None:
        return f"no price for the cluster: {fixed.missing}"
    units = offer.units(replicas, candidate.replicas_per_unit)
    units_per_hour = price.usd_per_hour * units
    fixed_per_hour = fixed.usd_per_hour if fixed is not None and fixed.usd_per_hour else 0.0
    per_hour = units_per_hour + fixed_per_hour
    hours = options.active_hours_per_month if offer.scales_to_zero else HOURS_PER_MONTH
    per_month = per_hour * hours
    if run is not None:
        per_month = units_per_hour * run.run_hours * options.runs_per_month + fixed_per_hour * HOURS_PER_MONTH
    rate = state.request_rate * replicas
    input_tps, output_tps = rate * options.prompt_tokens, rate * options.output_tokens
    per_second = per_hour / 3600
    share = min(max(state.prefill_busy, 0.0), 1.0)
    return Row(
        rank=0,
        model=candidate.model.id,
        variant=candidate.variant,
        shape=offer.shape.name,
        accelerator=offer.shape.accelerator,
        platform=offer.platform,
        region=offer.region,
        provisioning=offer.provisioning,
        zone=offer.zone,
        tensor_parallel=candidate.tensor_parallel,
        replicas=replicas,
        billed_units=units,
        batch_cap=candidate.replica.batch_cap,
        max_model_len=candidate.max_model_len,
        p95_ttft_ms=state.ttft_p95_s * 1000,
        mean_ttft_ms=state.ttft_mean_s * 1000,
        tpot_ms=state.tpot_s * 1000,
        requests_per_s=rate,
        input_tokens_per_s=input_tps,
        output_tokens_per_s=output_tps,
        prefill_share=share,
        usd_per_hour=per_hour,
        usd_per_month=per_month,
        request_tokens=options.prompt_tokens + options.output_tokens,
        replicas_per_unit=candidate.replicas_per_unit,
        peak_replicas=max(
            replicas, min(math.ceil(replicas * options.peak_factor), offer.max_replicas * candidate.replicas_per_unit)
        ),
        batch_run_hours=None if run is None else run.run_hours,
        usd_per_run=None if run is None else units_per_hour * run.run_hours,
        usd_per_million_input=per_second * share / input_tps * 1e6 if input_tps else None,
        usd_per_million_output=per_second * (1 - share) / output_tps * 1e6 if output_tps else None,
        scales_to_zero=offer.scales_to_zero,
        latency_basis=Basis(
            kind="estimated",
            source=basis_of(candidate.replica),
            error=stated_error(candidate.replica, options.prompt_tokens),
        ),
        price_basis=_price_basis(price, fixed, units),
        cost_split=COST_SPLIT,
        caveats=candidate.caveats,
        support_confirmed=candidate.support_confirmed,
        speculative_tokens=candidate.speculative_tokens,
    )


def _measured_row(row: Row, found: Verdict) -> Row:
    """The row with the record's figures, the estimate beside them, and the record named as its latency basis."""
    record = found.record
    estimate = f"estimate beside it: p95 TTFT {row.p95_ttft_ms:,.0f} ms, TPOT {row.tpot_ms:,.1f} ms"
    tpot = "p95" if record.p95_tpot_ms is not None else "mean"
    basis = Basis(
        kind="measured",
        source=f"speed record of {record.concurrency} users ({found.how}; {tpot} TPOT), vLLM "
        f"{record.vllm_version or '?'}: {record.cite()}; {estimate}",
    )
    return row.model_copy(update={"measured": found.figures, "latency_basis": basis})


def _kept_running(candidate: Candidate, row: Row, options: AdviseOptions) -> Row | str:
    """The steady row with what its capacity means (verify/advise/keep_running.py): a flex-start row's restart gap,
    a spot row's risk and fallback, a scale-to-zero row's cold starts at the workload's idle gaps (in its p95 TTFT
    where more than 5 % of requests meet one); or why the cold start puts it over the SLO."""
    offer = candidate.offer
    caveats = [
        c for c in (restart_gap(offer.provisioning, offer.platform), spot_risk(offer.provisioning, offer.platform)) if c
    ]
    update: dict[str, object] = {}
    if offer.scales_to_zero:
        cold_s = start_seconds(candidate.model, candidate.variant, offer.shape.accelerator)
        effect = cold_starts(row.requests_per_s, options.active_hours_per_month, cold_s)
        caveats.append(effect.describe())
        if effect.in_p95:
            p95 = row.p95_ttft_ms + cold_s * 1000
            slo = options.effective_slo.p95_ttft_ms
            if slo is not None and p95 > slo:
                return f"p95 TTFT {p95:,.0f} ms with the cold start ({effect.share:.0%} of requests meet one)"
            update["p95_ttft_ms"] = p95
        update["cold_start_share"] = effect.share
    return row.model_copy(update={**update, "caveats": (*row.caveats, *caveats)})


def _batch_run(candidate: Candidate, options: AdviseOptions, at_least: int) -> BatchRun | str:
    assert options.batch_requests is not None
    assert options.within_hours is not None
    offer = candidate.offer
    return plan_run(
        candidate.replica,
        _requests(options),
        batch=options.batch_requests,
        within_hours=options.within_hours,
        start_s=start_seconds(candidate.model, candidate.variant, offer.shape.accelerator),
        at_least=at_least,
        limit=min(offer.max_replicas * candidate.replicas_per_unit, options.max_replicas),
        flex_start_tpu=offer.provisioning == "flex-start" and offer.platform == "tpu",
    )


def _cell(candidate: Candidate, options: AdviseOptions) -> Cell:
    replica = candidate.replica
    return Cell(
        model=candidate.model.id,
        variant=candidate.variant,
        shape=candidate.offer.shape.name,
        tensor_parallel=candidate.tensor_parallel,
        max_num_seqs=replica.batch_cap,
        batched_tokens=replica.batched_tokens,
        speculative_tokens=candidate.speculative_tokens,
        kv_cache_dtype=options.kv_cache_dtype,
    )


@dataclass(frozen=True)
class _Decided:
    """The replica count a candidate is ranked at, its estimated state there, and the record that decided it."""

    replicas: int
    state: AtLoad
    measured: Verdict | None
    # Records that matched but could not decide (a percentile interval straddling the SLO, no sample count).
    undecided: tuple[str, ...] = ()


def decide(
    candidate: Candidate,
    options: AdviseOptions,
    records: list[SpeedRecord],
    states: dict[_StateKey, AtLoad],
) -> tuple[_Decided | None, list[Verdict]]:
    """The fewest replicas at which the SLO holds, a record deciding wherever one answers (both ways) and the
    estimate elsewhere; and the records that said it misses (for the exclusion's reason)."""
    limit = min(candidate.offer.max_replicas, options.max_replicas)
    estimated = fewest_replicas(candidate, options, states)
    cell = _cell(candidate, options)
    counts = measured_replica_counts(records, cell, options, limit)
    tried = set(counts) | {c + 1 for c in counts if c < limit}
    if estimated is not None:
        tried.add(estimated[0])
    misses: list[Verdict] = []
    undecided: list[str] = []
    for replicas in sorted(tried):
        found = verdict(records, cell, options, replicas) if counts else None
        if isinstance(found, str):
            undecided.append(found)
        elif found is not None:
            if found.meets:
                state = _state_at(candidate, options, replicas, states)
                return _Decided(replicas, state, found, tuple(undecided)), misses
            misses.append(found)
            continue
        if estimated is not None and replicas >= estimated[0]:
            state = _state_at(candidate, options, replicas, states)
            return _Decided(replicas, state, None, tuple(undecided)), misses
    return None, misses


def _state_at(candidate: Candidate, options: AdviseOptions, replicas: int, states: dict[_StateKey, AtLoad]) -> AtLoad:
    key = _state_key(candidate, replicas)
    if key not in states:
        states[key] = _state(candidate, options, replicas)
    return states[key]


def _price_basis(price: HourlyPrice, fixed: HourlyPrice | None, units: int) -> Basis:
    """The rates, their pages and days, and which were second-hand (read through a copy, or unconfirmed)."""
    parts = [price, *([fixed] if fixed is not None else [])]
    cluster = f" + the cluster {fixed.describe()}" if fixed is not None else ""
    second_hand = sorted({copy for part in parts for copy in part.second_hand()})
    unconfirmed = any("UNCONFIRMED" in p.label for part in parts for p in part.parts)
    warnings = [
        *(["second-hand: read through " + "; ".join(second_hand)] if second_hand else []),
        *(
            ["UNCONFIRMED rate: not re-read at Google's page (serving/data/pricing.json says why)"]
            if unconfirmed
            else []
        ),
    ]
    return Basis(
        kind="list price",
        source=f"{units} x {price.describe()}, {price.basis}{cluster}; rates: "
        + "; ".join(dict.fromkeys(part.citation() for part in parts))
        + " (serving/data/pricing.json)"
        + "".join(f"; {warning}" for warning in warnings),
    )


def _best_draft_length(rows: list[Row]) -> list[Row]:
    """One row per deployment: of its MTP candidates (off, and each draft length), the cheapest whose TPOT is no
    worse than MTP off's; at the same cost MTP off, then the shorter draft (a drafter that saves no replica is not
    worth its memory and its risk, and one that saves replicas only by slowing decode throttles the users)."""
    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        key = (row.model, row.variant, row.shape, row.platform, row.region, row.provisioning, row.zone or "")
        groups.setdefault(key, []).append(row)
    chosen = []
    for group in groups.values():
        off = next((row for row in group if not row.speculative_tokens), None)
        fair = [row for row in group if off is None or row.tpot_ms <= off.tpot_ms]
        chosen.append(min(fair or group, key=lambda r: (r.usd_per_month, r.speculative_tokens)))
    return chosen


def _ranked_row(
    candidate: Candidate,
    options: AdviseOptions,
    records: list[SpeedRecord],
    states: dict[_StateKey, AtLoad],
    excluded: _Excluded,
) -> Row | None:
    """The candidate's row at the fewest replicas that meet the SLO (a record deciding where one answers; a batch
    at the replicas that finish it in time), or None with its exclusion counted."""
    decided, misses = decide(candidate, options, records, states)
    if decided is None:
        if misses:
            excluded.add("measured: misses the SLO", f"{candidate.label} ({misses[0].record.cite()}, {misses[0].how})")
        else:
            limit = min(candidate.offer.max_replicas, options.max_replicas)
            excluded.add(f"misses the SLO at up to its replica limit ({limit} for its platform)", candidate.label)
        return None
    run: BatchRun | None = None
    replicas, state = decided.replicas, decided.state
    if options.batch_requests is not None:
        planned = _batch_run(candidate, options, replicas)
        if isinstance(planned, str):
            excluded.add("cannot finish the batch in time", f"{candidate.label}: {planned}")
            return None
        run, replicas = planned, planned.replicas
        state = _state_at(candidate, options, replicas, states)
    row = _row(candidate, replicas, state, options, run)
    if isinstance(row, str):
        excluded.add("no recorded price", f"{candidate.label}: {row}")
        return None
    if run is not None and options.batch_requests is not None:
        notes_of_run = (run.describe(options.batch_requests), *batch_caveat(candidate.offer.provisioning))
        row = row.model_copy(update={"caveats": (*row.caveats, *notes_of_run)})
    if decided.measured is not None:
        row = _measured_row(row, decided.measured)
    if decided.undecided:
        row = row.model_copy(update={"caveats": (*row.caveats, *decided.undecided)})
    if run is None:
        kept = _kept_running(candidate, row, options)
        if isinstance(kept, str):
            excluded.add("scale to zero: the cold start at idle gaps misses the SLO", f"{candidate.label}: {kept}")
            return None
        row = kept
    row = row.model_copy(update=quality_fields(candidate.model.id, candidate.variant))
    if options.budget_usd_per_month is not None and row.usd_per_month > options.budget_usd_per_month:
        excluded.add(f"over the budget of ${options.budget_usd_per_month:,.0f}/month", candidate.label)
        return None
    return row


def run_advise(
    options: AdviseOptions, *, root: Path | None = None, clock: Callable[[], float] = time.perf_counter
) -> AdviseReport:
    """The ranked deployments that meet the SLO at the load, and what was excluded and why. Speed records in the
    project (``root``'s calibration/speed/) replace an estimate where one matches the row's workload and load."""
    started = clock()
    excluded = _Excluded()
    trusted = trusted_records(project_root(root))
    records = trusted.records
    rows: list[Row] = []
    states: dict[_StateKey, AtLoad] = {}
    for candidate in candidates(options, excluded, records):
        row = _ranked_row(candidate, options, records, states, excluded)
        if row is not None:
            rows.append(row)
    rows = one_per_deployment(_best_draft_length(rows))
    # Cheapest first among what is known to run; a combination no public source shows running comes after
    # every confirmed one, however cheap (the user deploys rank 1; it must not be a guess).
    rows.sort(key=lambda r: (not r.support_confirmed, r.usd_per_month, r.p95_ttft_ms))
    if options.per_model:
        rows = best_per_model(rows)
    rows = with_versus(rows)
    ranked = tuple(row.model_copy(update={"rank": index}) for index, row in enumerate(rows[: options.top], 1))
    notes = [
        (
            "estimates are the latency model's (docs/advisor.md): trust them within the stated error for prompt- and "
            "decode-heavy work; `gemma-verify bench` measures, and a measured cell replaces the estimate"
        ),
        "the time outside the engine (client, network) is included in TTFT, as a client outside the region sees it",
    ]
    if options.slo_assumed:
        notes.append(
            f"no SLO was given: assumed {options.effective_slo.describe()} so that no row its own prediction calls "
            "unusable is ranked (--slo to state yours)"
        )
    notes += [f"speed record refused, not used: {line}" for line in trusted.refused[:REFUSED_SHOWN]]
    if len(trusted.refused) > REFUSED_SHOWN:
        notes.append(f"{len(trusted.refused) - REFUSED_SHOWN} more speed records refused")
    if any(not row.support_confirmed for row in ranked):
        notes.append(
            f"{UNCONFIRMED_MARK} support unconfirmed (no public source shows it running; see caveats): ranked after "
            "every confirmed deployment"
        )
    notes += adapter_fit.notes(options.adapters)
    if len(rows) > options.top:
        notes.append(f"{len(rows) - options.top} more deployments meet the SLO (--top to list them)")
    return AdviseReport(
        answer=(
            "the cheapest deployment of each model that meets the SLO, best model first (--min-score or --model "
            "for one ranking)"
            if options.per_model
            else "one ranking, cheapest first"
            + (
                f", models with {', '.join(f'{k} >= {v:g}' for k, v in options.min_scores)}"
                if options.min_scores
                else ""
            )
        ),
        workload=f"{options.describe_workload()}, kv-cache {options.kv_cache_dtype}",
        load=options.describe_load(),
        slo=options.describe_slo(),
        active_hours_per_month=options.active_hours_per_month,
        rows=ranked,
        excluded=excluded.summary(),
        notes=tuple(notes),
        elapsed_s=clock() - started,
    )
