"""The sweep: for each context x concurrency cell, a closed loop of streamed requests, then one line.

Why closed loop: "c users" means c requests in flight at all times, each user sending its next
request the moment the previous one ends, which is what `vllm bench serve --max-concurrency c`
does with an unlimited request rate. Per cell: warm-up requests first (not counted: they open
connections and let the server settle), then ``requests`` measured ones, never retried. The cell's
line is appended to the results file as soon as it is computed, so an interruption keeps it.

A cell is recorded only when it measured the server: if its prompts cannot be calibrated, or every
request of it failed to connect (the server died or restarted between cells), the sweep stops with
``EndpointLostError`` and writes no line for it, so ``--resume`` measures it once the server is back. A
server that answers with errors is measured: its failures are the result.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import httpx

from verify.bench import server_metrics
from verify.bench.arrivals import DEFAULT_SEED, ArrivalKind, Arrivals
from verify.bench.ceilings import decode_ceiling_of
from verify.bench.confidence import cell_confidence
from verify.bench.goodput import RequestBound, goodput
from verify.bench.judgement import AcceleratorFacts, ceiling_request_throughput, cost, platform_verdict
from verify.bench.metrics import CellMetrics
from verify.bench.open_loop import ScheduleSummary, open_loop_phase, schedule_trust
from verify.bench.options import Workload
from verify.bench.prompts import PromptBook, PromptError, PromptShape, TokenCounter, calibrate, unique_prefix
from verify.bench.results import CellKey, CellRecord, append_record
from verify.bench.samples import PhaseShare, pooled_samples, union_metrics
from verify.bench.scenarios import (
    LENGTH_SEED,
    Scenario,
    ScenarioOptions,
    bucket_of,
    chats,
    drawn_lengths,
    hidden_codes,
    measure_chats,
    needle_codes,
    needle_overhead,
    needle_recall,
    prompt_buckets,
    shared_prefixes,
    with_needles,
    with_prefixes,
)
from verify.bench.stall import StallSummary, stall_warning
from verify.bench.trust import Trust, combined, judge
from verify.bench.workers import WorkerPool, auth_headers, measure_phase
from verify.endpoint import TimeoutOptions
from verify.numbers import readable
from verify.reach import http_timeout
from verify.streaming import (
    Api,
    Clock,
    FailureKind,
    StreamRequest,
    StreamResult,
    classify_transport_error,
)

MIN_REQUESTS_PER_CELL = 32
REQUESTS_PER_USER = 4
MAX_DEFAULT_WARMUPS = 8
# Measured requests of an open-loop cell unless --requests says otherwise.
OPEN_LOOP_REQUESTS = 100
# Failures that mean no request reached the server: a cell made only of them measured nothing.
_NOT_CONNECTED = frozenset({FailureKind.CONNECT_ERROR, FailureKind.CONNECT_TIMEOUT})


class EndpointLostError(Exception):
    """The endpoint stopped answering mid-sweep; the cell named was not measured and not recorded."""

    def __init__(self, context: int, concurrency: int, cause: str, rate: float | None = None) -> None:
        self.cell = Cell(context, concurrency, rate).label()
        self.cause = cause
        super().__init__(f"{self.cell}: {cause}")


class Cell(NamedTuple):
    """One cell of a sweep: a prompt length and a number of users (closed loop), or a rate with at most
    ``concurrency`` requests in flight (open loop)."""

    context: int
    concurrency: int
    rate: float | None = None

    def label(self) -> str:
        if self.rate is None:
            return f"context {self.context} x concurrency {self.concurrency}"
        return f"context {self.context} x {self.rate:g} req/s"


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """The workload: which cells, and what every request asks for. With ``rates`` the cells are open-loop
    (context x rate), each with at most ``concurrencies[0]`` requests in flight."""

    model: str
    contexts: tuple[int, ...]
    concurrencies: tuple[int, ...]
    max_tokens: int
    api: Api = Api.CHAT
    requests: int | None = None  # per cell; None: max(4 x concurrency, 32)
    warmups: int | None = None  # per cell; None: min(concurrency, 8)
    ignore_eos: bool = True
    timeouts: httpx.Timeout | None = None
    deadline_s: float | None = None  # per request in all; None: the read timeout + 1 s per output token
    rates: tuple[float, ...] = ()
    arrival: ArrivalKind = ArrivalKind.POISSON
    burstiness: float = 1.0
    seed: int = DEFAULT_SEED
    # Per-request latency bounds (from the --slo gates) each request is judged against for goodput.
    bounds: tuple[RequestBound, ...] = ()
    scenario: ScenarioOptions = field(default_factory=ScenarioOptions)
    # The fewest measured requests the gates' percentiles need (verify.bench.slo.requests_needed): a default
    # count is raised to it; an explicit ``requests`` is the user's (refused before the run when too few).
    min_requests: int = 0
    # Every name the served model answers as (its aliases in /v1/models): a chunk naming any other is
    # another model's answer (verify.streaming's wrong_model).
    answer_names: frozenset[str] = frozenset()

    def requests_for(self, concurrency: int) -> int:
        if self.requests is not None:
            return self.requests
        if self.rates:
            return max(OPEN_LOOP_REQUESTS, self.min_requests)
        return max(REQUESTS_PER_USER * concurrency, MIN_REQUESTS_PER_CELL, self.min_requests)

    def arrivals(self, rate: float) -> Arrivals:
        return Arrivals(rate, self.arrival, self.burstiness, self.seed)

    def warmups_for(self, concurrency: int) -> int:
        return self.warmups if self.warmups is not None else min(concurrency, MAX_DEFAULT_WARMUPS)

    def cells(self) -> list[Cell]:
        """In the order they run: each context from few users to many (or from a low rate to a high one)."""
        if self.rates:
            cap = self.concurrencies[0]
            return [Cell(context, cap, rate) for context, rate in itertools.product(self.contexts, self.rates)]
        return [Cell(context, users) for context, users in itertools.product(self.contexts, self.concurrencies)]

    def key(self, context: int, concurrency: int, rate: float | None = None) -> CellKey:
        return CellKey(self.model, self.api.value, context, concurrency, self.max_tokens, rate)

    def request(self, prompt: str, prompt_tokens: int, max_tokens: int | None = None) -> StreamRequest:
        """One request for ``prompt``, which the server counted as ``prompt_tokens`` when it was built (usage
        must say about as much); ``max_tokens`` (at most the plan's) for a drawn output length."""
        tokens = self.max_tokens if max_tokens is None else max_tokens
        return StreamRequest(
            model=self.model,
            prompt=prompt,
            max_tokens=tokens,
            api=self.api,
            ignore_eos=self.ignore_eos,
            # vLLM stops at EOS unless told otherwise; min_tokens makes the output length exact.
            min_tokens=tokens if self.ignore_eos else None,
            answer_names=self.answer_names | {self.model},
            expected_prompt_tokens=prompt_tokens,
        )


def plan_for(
    workload: Workload,
    *,
    model: str,
    timeouts: TimeoutOptions,
    bounds: tuple[RequestBound, ...] = (),
    min_requests: int = 0,
    answer_names: frozenset[str] = frozenset(),
) -> SweepPlan:
    """The plan ``workload`` describes for ``model``, each request bounded by ``timeouts`` and judged for
    goodput against ``bounds``, each cell's default request count at least ``min_requests``."""
    return SweepPlan(
        model=model,
        contexts=workload.context,
        concurrencies=workload.concurrency,
        max_tokens=workload.max_tokens,
        api=workload.api,
        requests=workload.requests,
        warmups=workload.warmup,
        ignore_eos=workload.ignore_eos,
        timeouts=http_timeout(timeouts),
        deadline_s=timeouts.request_deadline_s(workload.max_tokens),
        rates=workload.request_rates,
        arrival=workload.arrival,
        burstiness=workload.burstiness,
        seed=workload.seed,
        bounds=bounds,
        scenario=workload.scenario,
        min_requests=min_requests,
        answer_names=answer_names,
    )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Facts about the server recorded with every cell and used to judge it."""

    base_url: str
    platform: str | None = None
    vllm_version: str | None = None
    max_model_len: int | None = None
    admission_limit: int | None = None
    transport: str | None = None
    accelerator: AcceleratorFacts = field(default_factory=lambda: AcceleratorFacts(None, None, None, None))
    model_params: float | None = None
    # Draft tokens a step may add (the stack's speculative decoding; 0 none, None unknown): the decode ceiling's.
    speculative_tokens: int | None = None


class SweepObserver(Protocol):
    """Progress reporting; the sweep works the same without one."""

    def cell_started(self, label: str, requests: int) -> None: ...

    def request_finished(self, result: StreamResult) -> None: ...

    def cell_finished(self, record: CellRecord) -> None: ...


class QuietObserver:
    def cell_started(self, label: str, requests: int) -> None:
        """Nothing to show."""

    def request_finished(self, result: StreamResult) -> None:
        """Nothing to show."""

    def cell_finished(self, record: CellRecord) -> None:
        """Nothing to show."""


async def closed_loop(
    client: httpx.AsyncClient,
    requests: Sequence[StreamRequest],
    concurrency: int,
    *,
    timeouts: httpx.Timeout | None = None,
    deadline_s: float | None = None,
    clock: Clock = time.perf_counter,
    on_result: Callable[[StreamResult], None] | None = None,
) -> tuple[list[StreamResult], float]:
    """Keep ``concurrency`` requests in flight until all are done; results in request order and the
    wall time from the first send to the last answer."""
    share = await measure_phase(
        client, requests, concurrency, timeouts=timeouts, deadline_s=deadline_s, clock=clock, on_result=on_result
    )
    return [sample.result for sample in share.samples_in_send_order()], share.finished_at - share.started_at


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _base_fields(
    plan: SweepPlan, endpoint: Endpoint, context: int, concurrency: int, rate: float | None = None
) -> dict[str, object]:
    open_loop: dict[str, object] = {}
    if rate is not None:
        open_loop = {
            "request_rate": rate,
            "arrival": plan.arrival.value,
            "burstiness": plan.burstiness if plan.arrival is ArrivalKind.GAMMA else None,
            "arrival_seed": plan.seed,
        }
    return open_loop | {
        "scenario": plan.scenario.describe(),
        "timestamp": _now(),
        "model": plan.model,
        "api": plan.api.value,
        "requested_context": context,
        "max_concurrency": concurrency,
        "max_tokens": plan.max_tokens,
        "num_prompts": plan.requests_for(concurrency),
        "num_warmups": plan.warmups_for(concurrency),
        "ignore_eos": plan.ignore_eos,
        "base_url": endpoint.base_url,
        "platform": endpoint.platform,
        "accelerator": endpoint.accelerator.name,
        "vllm_version": endpoint.vllm_version,
        "max_model_len": endpoint.max_model_len,
        "transport": endpoint.transport,
        "admission_limit": endpoint.admission_limit,
    }


def skip_reason(plan: SweepPlan, endpoint: Endpoint, context: int) -> str | None:
    if endpoint.max_model_len is not None and context + plan.max_tokens > endpoint.max_model_len:
        return (
            f"prompt {context} + max tokens {plan.max_tokens} exceeds the server's max_model_len "
            f"{endpoint.max_model_len}"
        )
    turns = plan.scenario.turns if plan.scenario.kind is Scenario.MULTI_TURN else 1
    if endpoint.max_model_len is not None and turns * (context + plan.max_tokens) > endpoint.max_model_len:
        return (
            f"{turns} turns of prompt {context} + max tokens {plan.max_tokens} exceed the server's max_model_len "
            f"{endpoint.max_model_len} by the last turn"
        )
    return None


def measured_record(
    plan: SweepPlan,
    endpoint: Endpoint,
    *,
    context: int,
    concurrency: int,
    metrics: CellMetrics,
    shape: PromptShape,
    stalls: StallSummary | None = None,
    trust: Trust | None = None,
    workers: int | None = None,
    rate: float | None = None,
    extra: dict[str, object] | None = None,
) -> CellRecord:
    """Turn a cell's metrics into its line, with the judgements attached; ``extra`` adds fields computed
    from the raw samples (goodput, confidence, the schedule of an open-loop cell)."""
    warnings: list[str] = []
    stalled = None if stalls is None else stall_warning(stalls, metrics.ttft.mean if metrics.completed else None)
    if trust is not None and not trust.trusted and trust.reason is not None:
        warnings.append(trust.reason)
    if stalled is not None:
        warnings.append(stalled)
    if not shape.exact:
        warnings.append(
            f"prompts are {shape.measured} tokens, not {context} (the nearest the server's template allows)"
        )
    verdict = platform_verdict(concurrency, endpoint.admission_limit, metrics.errors)
    if verdict.over_limit:
        warnings.append(
            f"concurrency {concurrency} exceeds what Cloud Run admits ({verdict.admission_limit} = concurrency "
            f"x max instances): {verdict.limited_failures} failures are the platform's limit, not the model's"
        )
    completed = max(metrics.completed, 1)
    tokens_per_request = (metrics.total_input_tokens + metrics.total_output_tokens) / completed
    ceiling = ceiling_request_throughput(endpoint.accelerator.peak_flops, endpoint.model_params, tokens_per_request)
    exceeds = ceiling is not None and metrics.request_throughput > ceiling
    if exceeds:
        warnings.append(
            f"{readable(metrics.request_throughput)} req/s is above the physical ceiling of {readable(ceiling)} req/s "
            f"(peak FLOP/s / (2 x params x {tokens_per_request:.0f} tokens)): this number cannot be true; "
            "look for prompts served from the prefix cache or a wrong accelerator/params"
        )
    spend = cost(endpoint.accelerator.price_per_hour_usd, metrics.request_throughput, metrics.output_throughput)
    fields = _base_fields(plan, endpoint, context, concurrency, rate)
    fields.update(metrics.as_fields())
    fields.update(extra or {})
    fields.update(
        {
            "accelerator_count": endpoint.accelerator.chips,
            "speculative_tokens": endpoint.speculative_tokens,
            "model_params": endpoint.model_params,
        }
    )
    provisional = CellRecord.model_validate({**fields, "status": "measured"})
    decode = decode_ceiling_of(provisional)
    if decode is not None:
        fields.update({"ceiling_stream_tokens_per_s": decode.per_stream, "ceiling_output_throughput": decode.total})
        problem = decode.problem(provisional.output_throughput, provisional.mean_tpot_ms, concurrency)
        if problem is not None:
            exceeds = True
            warnings.append(f"{problem}: this number cannot be true; look for a wrong model name or accelerator")
    fields.update(
        {
            "status": "measured",
            "prompt_length_source": shape.source.value,
            "platform_limited": verdict.over_limit and verdict.limited_failures > 0,
            "platform_limited_failures": verdict.limited_failures,
            "price_per_hour_usd": endpoint.accelerator.price_per_hour_usd,
            "price_basis": endpoint.accelerator.price_basis,
            "cost_per_1m_requests_usd": spend.per_1m_requests_usd,
            "cost_per_1m_output_tokens_usd": spend.per_1m_output_tokens_usd,
            "ceiling_request_throughput": ceiling,
            "exceeds_ceiling": exceeds,
            "client_max_stall_ms": None if stalls is None else stalls.max_ms,
            "client_stalled_ms": None if stalls is None else stalls.stalled_ms,
            "client_mean_lag_ms": None if stalls is None else stalls.mean_ms,
            "client_workers": workers,
            "trusted": trust is None or trust.trusted,
            "untrusted_reason": None if trust is None else trust.reason,
            "warnings": warnings,
        }
    )
    return CellRecord.model_validate(fields)


async def run_cell(
    client: httpx.AsyncClient,
    plan: SweepPlan,
    endpoint: Endpoint,
    context: int,
    concurrency: int,
    *,
    counter: TokenCounter,
    book: PromptBook,
    observer: SweepObserver,
    shape: PromptShape | None = None,
    clock: Clock = time.perf_counter,
    pool: WorkerPool | None = None,
    rate: float | None = None,
) -> CellRecord:
    """Calibrate prompts (unless ``shape`` is given), warm up, measure, judge: one cell's line (not yet
    written). With ``pool``, the users are spread over its worker processes (verify.bench.workers). With
    ``rate``, the cell is open-loop (verify.bench.open_loop, in this process): at most ``concurrency``
    requests in flight."""
    if shape is None:
        shape = await calibrated(counter, context, concurrency, nonce=book.nonce)
    warmups = plan.warmups_for(concurrency)
    requests = plan.requests_for(concurrency)
    scenario = plan.scenario
    cell = Cell(context, concurrency, rate)
    built = await scenario_requests(plan, cell, warmups + requests, counter=counter, book=book, shape=shape)
    warmup_requests, measured_requests = built[:warmups], built[warmups:]
    label = cell.label()
    shares: list[PhaseShare]
    schedule: ScheduleSummary | None = None
    # What the server's counters saw during the cell: the prefix cache (the point of the non-default scenarios)
    # and, when the stack does not say, whether speculative decoding ran (what the decode ceiling may allow).
    before = await server_metrics.snapshot(client, plan.model)
    # Multi-turn chats wait for their own answers and the needle reads every answer's text: both in this process.
    if pool is None or rate is not None or scenario.kind in (Scenario.MULTI_TURN, Scenario.NEEDLE):
        if warmups:
            warmed, _ = await closed_loop(
                client,
                warmup_requests,
                min(concurrency, warmups),
                timeouts=plan.timeouts,
                deadline_s=plan.deadline_s,
                clock=clock,
            )
            _stop_if_unreachable(warmed, cell)
        observer.cell_started(label, requests)
        if scenario.kind is Scenario.MULTI_TURN:
            share = await measure_chats(
                client,
                chats(measured_requests, scenario.turns),
                concurrency,
                timeouts=plan.timeouts,
                deadline_s=plan.deadline_s,
                clock=clock,
                on_result=observer.request_finished,
            )
        elif rate is None:
            share = await measure_phase(
                client,
                measured_requests,
                concurrency,
                timeouts=plan.timeouts,
                deadline_s=plan.deadline_s,
                clock=clock,
                on_result=observer.request_finished,
            )
        else:
            share, schedule = await open_loop_phase(
                client,
                measured_requests,
                plan.arrivals(rate),
                max_in_flight=concurrency,
                timeouts=plan.timeouts,
                deadline_s=plan.deadline_s,
                clock=clock,
                on_result=observer.request_finished,
            )
        shares = [share]
    else:
        shares = await pool.run_phase(
            warmup_requests,
            measured_requests,
            concurrency,
            headers=await auth_headers(client),
            timeouts=plan.timeouts,
            deadline_s=plan.deadline_s,
            on_measuring=lambda: observer.cell_started(label, requests),
            on_result=observer.request_finished,
        )
    _stop_if_unreachable([sample.result for share in shares for sample in share.samples], cell)
    metrics = union_metrics(shares)
    stalls = [share.stalls for share in shares]
    trust = judge(stalls, metrics.ttft.mean if metrics.completed else None)
    extra = sample_fields(plan, shares)
    after = None if before is None else await server_metrics.snapshot(client, plan.model)
    if scenario.kind is not Scenario.RANDOM and before is not None:
        extra["prefix_cache_hit_rate"] = None if after is None else after.since(before).prefix_cache_hit_rate
    if endpoint.speculative_tokens is None:
        endpoint = dataclasses.replace(endpoint, speculative_tokens=server_metrics.draft_tokens_per_step(before, after))
    during = None if before is None or after is None else after.since(before)
    if during is not None and during.spec_decode_drafts:
        # The server's own counters give the served checkpoints' acceptance (serving/speculation.py).
        extra["spec_decode_drafts"] = during.spec_decode_drafts
        extra["spec_decode_accepted_tokens"] = during.spec_decode_accepted_tokens
    if scenario.kind is Scenario.NEEDLE:
        answers = [sample for share in shares for sample in share.samples]
        extra["needle_recall"] = needle_recall(answers, hidden_codes(measured_requests))
    if schedule is not None:
        extra.update(schedule.as_fields())
        kept = schedule_trust(schedule)
        trust = kept if not kept.trusted else trust
    return measured_record(
        plan,
        endpoint,
        context=context,
        concurrency=concurrency,
        metrics=metrics,
        shape=shape,
        stalls=combined(stalls),
        trust=trust,
        workers=len(shares),
        rate=rate,
        extra=extra,
    )


async def scenario_requests(
    plan: SweepPlan,
    cell: Cell,
    count: int,
    *,
    counter: TokenCounter,
    book: PromptBook,
    shape: PromptShape,
) -> list[StreamRequest]:
    """``count`` requests of the plan's scenario (verify/bench/scenarios.py) for ``cell``."""
    scenario = plan.scenario
    context, concurrency = cell.context, cell.concurrency
    if scenario.kind is Scenario.SHARED_PREFIX:
        # The unique part after the shared one, so the whole prompt is about `context` tokens.
        unique = await calibrated(counter, max(context - scenario.prefix_tokens, 1), concurrency, nonce=book.nonce)
        prefixes = await shared_prefixes(counter, scenario, nonce=book.nonce)
        tokens = unique.measured + scenario.prefix_tokens
        return [plan.request(prompt, tokens) for prompt in with_prefixes(book.take(unique, count), prefixes)]
    if scenario.kind is Scenario.LENGTHS:
        buckets = prompt_buckets(context)
        shapes = {length: await calibrated(counter, length, concurrency, nonce=book.nonce) for length in buckets}
        drawn = [shapes[bucket_of(length, buckets)] for length in drawn_lengths(context, count)]
        outputs = drawn_lengths(plan.max_tokens, count, seed=LENGTH_SEED + 1)
        return [
            plan.request(book.take(bucket, 1)[0], bucket.measured, tokens)
            for bucket, tokens in zip(drawn, outputs, strict=True)
        ]
    if scenario.kind is Scenario.NEEDLE:
        try:
            overhead = await needle_overhead(counter, nonce=book.nonce)
        except (PromptError, httpx.HTTPError):
            overhead = 0  # a server that cannot count: the calibration below says so, as for every scenario
        haystack = await calibrated(counter, max(context - overhead, 1), concurrency, nonce=book.nonce)
        prompts = book.take(haystack, count)
        codes = needle_codes(count, seed=prompts[0] if prompts else book.nonce)
        keep = len(unique_prefix(book.nonce, 0).split(" "))
        tokens = haystack.measured + overhead
        return [plan.request(prompt, tokens) for prompt in with_needles(prompts, codes, keep_words=keep)]
    return [plan.request(prompt, shape.measured) for prompt in book.take(shape, count)]


def sample_fields(plan: SweepPlan, shares: Sequence[PhaseShare]) -> dict[str, object]:
    """What the raw samples say beyond vLLM's summary: each percentile's interval (or too few samples for
    one), the throughput's interval, and goodput against the plan's per-request bounds."""
    samples = pooled_samples(shares)
    started = min((share.started_at for share in shares), default=0.0)
    finished = max((share.finished_at for share in shares), default=0.0)
    succeeded = [sample for sample in samples if sample.result.ok]
    values: dict[str, Sequence[float]] = {
        "ttft": [s.result.ttft_s for s in succeeded if s.result.ttft_s is not None],
        "tpot": [tpot for s in succeeded if (tpot := s.result.tpot_s) is not None],
        "itl": [gap for s in succeeded for gap in s.result.itl_s],
        "e2el": [s.result.e2el_s for s in succeeded],
    }
    completions = [s.sent_at + s.result.e2el_s for s in succeeded]
    fields = cell_confidence(values, completions, started_at=started, finished_at=finished)
    good = goodput(samples, plan.bounds, started_at=started, finished_at=finished)
    if good is not None:
        fields.update(good.as_fields())
    return fields


def _stop_if_unreachable(results: Sequence[StreamResult], cell: Cell) -> None:
    """Raise ``EndpointLostError`` when no request reached the server (each one failed to connect)."""
    failures = [result.failure for result in results]
    if not failures or any(failure is None or failure.kind not in _NOT_CONNECTED for failure in failures):
        return
    last = failures[-1]
    assert last is not None  # every failure is set, per the test above
    cause = f"every request failed to connect ({last.kind.value}: {last.detail})"
    raise EndpointLostError(cell.context, cell.concurrency, cause, cell.rate)


async def calibrated(counter: TokenCounter, context: int, concurrency: int, *, nonce: str) -> PromptShape:
    """``calibrate``, with a server that cannot count prompts turned into ``EndpointLostError``."""
    try:
        return await calibrate(counter, context, nonce=nonce)
    except PromptError as exc:
        raise EndpointLostError(context, concurrency, f"prompts could not be calibrated: {exc}") from None
    except httpx.HTTPError as exc:
        failure = classify_transport_error(exc)
        raise EndpointLostError(
            context, concurrency, f"prompts could not be calibrated: {failure.kind.value} ({failure.detail})"
        ) from None


async def run_sweep(
    client: httpx.AsyncClient,
    plan: SweepPlan,
    endpoint: Endpoint,
    *,
    results_path: Path,
    done: set[CellKey],
    counter: TokenCounter,
    book: PromptBook | None = None,
    observer: SweepObserver | None = None,
    clock: Clock = time.perf_counter,
    pool: WorkerPool | None = None,
) -> list[CellRecord]:
    """Run every cell not in ``done``, appending each line to ``results_path`` as it finishes.

    Raises ``EndpointLostError`` (with the cells finished so far already in the file) when the endpoint
    stops answering."""
    watcher = observer if observer is not None else QuietObserver()
    prompts = book if book is not None else PromptBook()
    written: list[CellRecord] = []
    # One calibration per context: the prompt length does not depend on the number of users.
    shapes: dict[int, PromptShape] = {}
    for context, concurrency, rate in plan.cells():
        if plan.key(context, concurrency, rate) in done:
            continue
        reason = skip_reason(plan, endpoint, context)
        if reason is not None:
            fields = _base_fields(plan, endpoint, context, concurrency, rate)
            fields.update({"status": "skipped", "skip_reason": reason})
            record = CellRecord.model_validate(fields)
        else:
            if context not in shapes:
                shapes[context] = await calibrated(counter, context, concurrency, nonce=prompts.nonce)
            record = await run_cell(
                client,
                plan,
                endpoint,
                context,
                concurrency,
                counter=counter,
                book=prompts,
                observer=watcher,
                shape=shapes[context],
                clock=clock,
                pool=pool,
                rate=rate,
            )
        append_record(results_path, record)
        written.append(record)
        watcher.cell_finished(record)
    return written
