"""Fitting the latency model's factors to measured figures: the write-ups' (the priors) and the project's speed records.

Why here, beside stacks/estimate.py: a figure is predicted by the same replica every estimate uses (the model's
arithmetic, the shapes table's hardware, vLLM's defaults per accelerator from stacks/capacity.py, the capacity
planner's batch cap), with the factors under fit in place of the stored ones. `python -m benchmarks.writeup_figures`
fits the write-up figures and states the errors; `gemma-verify calibrate --refit` adds the project's trusted
speed records (serving/speed_records.py) and writes the result where every estimate reads it
(serving/data/latency-efficiency.json).

How the fit works (docs/advisor.md): the factors are few and physical, per accelerator family where the family
matters: achieved / peak compute and bandwidth, and the fixed time of a forward pass, for GPUs and for TPUs;
each measurement client's time outside the server (network, HTTP), and the host's CPU time per prompt token,
shared; and the write-up sweeps' unknown output length, a nuisance bounded by write-up B's counters (1 to 5
tokens) and printed. They minimise the sum over targets of a robust (soft-L1) loss of log(predicted /
measured) / the target's error, by Levenberg-Marquardt on the continuous factors at each output length: a
family's factors are moved only by its own figures. The setups state what the catalog cannot: the host's vCPUs,
how much of each sweep prompt the prefix cache could serve (the sweeps resent their prompts), the MTP counters
of the checkpoints, and Cloud Run's 1000 requests per instance, each with the sentence that supports it.
"""

from __future__ import annotations

import datetime
import functools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from serving import least_squares
from serving.catalog import catalog_model
from serving.latency import AtLoad, Replica, Requests, with_users
from serving.least_squares import Parameter
from serving.model_cost import model_cost
from serving.planner import CapacityPlan, KvLayout, PlanInputs, plan_capacity
from serving.shapes import accelerator_facts
from serving.speculation import Counters, speculation_for
from serving.speed_facts import (
    FAMILIES,
    FamilyFactors,
    FittedEfficiency,
    FittedError,
    KindError,
    Provenance,
    hardware_for,
)
from serving.speed_records import SpeedRecord
from serving.units import GB, GIB
from serving.writeup_figures import Figure, Setup, Use, WriteupFigures
from stacks.capacity import (
    GPU_BLOCK_SIZE,
    GPU_RUNTIME_OVERHEAD_GIB_PER_GPU,
    TPU_BLOCK_SIZE,
    TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP,
)
from stacks.estimate import LONG_PROMPT, batched_tokens, host_vcpus_of
from stacks.fit import Workload, shape_named
from stacks.fit import fit as fit_combination

# vLLM's --max-num-seqs when a write-up does not state one (vLLM 0.32's default for the OpenAI server).
DEFAULT_MAX_NUM_SEQS = 256
# The usable share of device memory: vLLM's default --gpu-memory-utilization on GPUs; on the TPU the v6e-4 log's
# own 114.99 / 124.98 GiB (C-01, C-02).
GPU_UTILISATION = 0.90
TPU_UTILISATION = 114.99 / 124.98
# The sweeps' output tokens: at most 9,494 / (29,389,524 / 16,384) = 5.3 a request (B-02, B-03; the data's note).
SWEEP_OUTPUT_BOUNDS = (1, 5)
# Where the continuous factors may go: physical limits (an efficiency is a share of a peak; a fixed time is a
# few milliseconds of launches and scheduling, a client's time under a second).
BOUNDS: dict[str, tuple[float, float]] = {
    "compute": (0.05, 1.0),
    "bandwidth": (0.1, 1.0),
    "step_ms": (0.0, 20.0),
    "client_s": (0.0, 0.5),
    "host_us_per_token": (0.0, 100.0),
}
START = {"compute": 0.4, "bandwidth": 0.6, "step_ms": 1.0, "client_s": 0.1, "host_us_per_token": 5.0}
# The measurement clients whose figures include time outside the server (the setups' `client`; E's figure is a
# single stream's decode rate, which includes none), and the project's own bench (its speed records).
CLIENT_WRITEUPS = ("A", "B", "C", "quoted TPU")
RECORDS_CLIENT = "records"
CLIENTS = (*CLIENT_WRITEUPS, RECORDS_CLIENT)
# The quantities a figure can have that the load model predicts, and the kinds of workload advise states an
# error for (a figure's kind is its regime: one stream decoding, or a sweep of short or long prompts).
PREDICTED = ("request_rate", "latency_s", "ttft_s", "decode_tokens_per_s", "total_s")
KINDS = ("single stream", "short prompts", "long prompts")


@dataclass(frozen=True)
class Params:
    """Every fitted number: per family (compute, bandwidth, step_ms), the time outside the server per write-up's
    client (each ran its own from its own place), then the shared ones."""

    families: tuple[tuple[str, FamilyFactors], ...]
    clients: tuple[tuple[str, float], ...]
    host_us_per_token: float
    sweep_output_tokens: int

    def family(self, name: str) -> FamilyFactors:
        return dict(self.families)[name]

    @property
    def client_s(self) -> float:
        """A typical remote client's time: the median of the write-ups' clients (what advise assumes)."""
        remote = [value for client, value in self.clients if client in CLIENT_WRITEUPS]
        return statistics.median(remote) if remote else START["client_s"]

    def client(self, writeup: str) -> float:
        """The write-up's client time; a write-up the fit never saw gets the typical one."""
        return dict(self.clients).get(writeup, self.client_s)

    def with_client(self, name: str, seconds: float) -> Params:
        return replace(self, clients=tuple(sorted((dict(self.clients) | {name: seconds}).items())))

    def with_family(self, name: str, **changes: float) -> Params:
        updated = tuple(
            (family, factors.model_copy(update=changes) if family == name else factors)
            for family, factors in self.families
        )
        return replace(self, families=updated)

    @classmethod
    def start(cls) -> Params:
        factors = FamilyFactors(compute=START["compute"], bandwidth=START["bandwidth"], step_ms=START["step_ms"])
        return cls(
            families=tuple((family, factors) for family in FAMILIES),
            # No client fitted yet: each starts at the typical one, and a client no target measures (a write-up
            # left out) keeps the typical one of those that were fitted.
            clients=(),
            host_us_per_token=START["host_us_per_token"],
            sweep_output_tokens=3,
        )

    @classmethod
    def of(cls, fitted: FittedEfficiency) -> Params:
        return cls(
            families=tuple((family, fitted.factors(family)) for family in FAMILIES),
            clients=tuple(sorted(fitted.client_s_by_writeup.items())),
            host_us_per_token=fitted.host_us_per_token,
            sweep_output_tokens=fitted.sweep_output_tokens,
        )


@dataclass(frozen=True)
class Prediction:
    figure: Figure
    predicted: float | None
    note: str

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 (None: not predicted, or a measured zero)."""
        if self.predicted is None or not self.figure.value:
            return None
        return self.predicted / self.figure.value - 1

    @property
    def counted(self) -> bool:
        """Whether the figure counts in the fit and the errors: predicted, checked and not flagged."""
        return self.error is not None and self.figure.use is Use.CHECK and not self.figure.flagged


def _family(setup: Setup) -> str:
    """The setup's accelerator family in the shapes table: what the layout, memory and defaults follow."""
    return accelerator_facts(setup.accelerator).family


def _layout(setup: Setup) -> KvLayout:
    return KvLayout.TPU if _family(setup) == "tpu" else KvLayout.VLLM_HYBRID


def _device_bytes(setup: Setup) -> int:
    return round(accelerator_facts(setup.accelerator).memory_gib * GIB)


def _batched_tokens(setup: Setup) -> int:
    """The setup's --max-num-batched-tokens, or vLLM 0.32's default for the accelerator (stacks/capacity.py)."""
    if setup.batched_tokens is not None:
        return setup.batched_tokens
    return batched_tokens(setup.accelerator)


def plan_inputs(setup: Setup, sequence_tokens: int) -> PlanInputs:
    """The capacity planner's inputs for a write-up setup serving sequences of ``sequence_tokens``."""
    assert setup.variant is not None
    model = catalog_model(setup.model)
    tpu = _family(setup) == "tpu"
    overhead = (
        TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP * setup.chips if tpu else GPU_RUNTIME_OVERHEAD_GIB_PER_GPU * setup.chips
    )
    return PlanInputs(
        model=model.profile_file(setup.variant).to_profile(),
        max_model_len=setup.max_model_len or sequence_tokens,
        max_num_seqs=setup.max_num_seqs or DEFAULT_MAX_NUM_SEQS,
        kv_cache_dtype=setup.kv_cache_dtype,
        device_memory_bytes=_device_bytes(setup),
        gpu_memory_utilization=TPU_UTILISATION if tpu else GPU_UTILISATION,
        tensor_parallel_size=setup.chips,
        runtime_overhead_bytes=round(overhead * GIB),
        layout=_layout(setup),
        block_size=TPU_BLOCK_SIZE if tpu else GPU_BLOCK_SIZE,
        workload_tokens=min(sequence_tokens, setup.max_model_len or sequence_tokens),
        accelerator_label=setup.accelerator,
    )


_PLANS: dict[tuple[int, int], CapacityPlan] = {}


def _plan(setup: Setup, sequence_tokens: int) -> CapacityPlan:
    """The setup's capacity plan, once per sequence size: it depends on no fitted factor, and a fit asks it of
    every figure hundreds of times."""
    key = (id(setup), sequence_tokens)
    if key not in _PLANS:
        _PLANS[key] = plan_capacity(plan_inputs(setup, sequence_tokens))
    return _PLANS[key]


def replica(setup: Setup, requests: Requests, params: Params) -> Replica | str:
    """The load model's replica for a setup, or why there is none (weights do not fit, ...)."""
    assert setup.variant is not None
    plan = _plan(setup, requests.prompt_tokens + requests.output_tokens)
    if not plan.fits or plan.workload_concurrency is None:
        return "; ".join(finding.message for finding in plan.errors) or "no KV capacity"
    cap = min(setup.max_num_seqs or DEFAULT_MAX_NUM_SEQS, math.floor(plan.workload_concurrency))
    if cap < 1:
        return "not one request of this workload fits the KV cache"
    model = catalog_model(setup.model)
    cost = model_cost(
        model, setup.variant, kv_cache_dtype=setup.kv_cache_dtype, tensor_parallel=setup.chips, layout=_layout(setup)
    )
    hardware = hardware_for(setup.accelerator, setup.chips, host_vcpus=setup.host.vcpu)
    factors = params.family(hardware.family)
    efficiency = FittedEfficiency.efficiency_of(factors, params.client(setup.client.name), params.host_us_per_token)
    speculation = None
    if setup.mtp_tokens:
        counters = setup.mtp_counters
        speculation = speculation_for(
            model,
            setup.variant,
            setup.mtp_tokens,
            kv_cache_dtype=setup.kv_cache_dtype,
            tensor_parallel=setup.chips,
            counters=None
            if counters is None
            else Counters(counters.drafts, counters.accepted, counters.draft_tokens_measured, counters.why),
        )
    return Replica(
        cost,
        hardware,
        efficiency,
        batch_cap=cap,
        batched_tokens=_batched_tokens(setup),
        speculation=speculation,
        kv_sequences=plan.workload_concurrency,
    )


def requests_of(setup: Setup, figure: Figure, params: Params) -> Requests:
    """A figure's request: its prompt, its output (the fitted nuisance for a sweep) and, for a sweep, the reuse
    its setup states; a single request is its prompt's first (cold)."""
    workload = figure.workload
    assert workload.prompt_tokens is not None
    sweep = workload.output_tokens is None
    output = params.sweep_output_tokens if sweep else workload.output_tokens
    assert output is not None
    reused = round(setup.sweep_reuse.share * workload.prompt_tokens) if sweep else 0
    return Requests(workload.prompt_tokens, output, reused_tokens=reused, distinct_prefixes=setup.sweep_reuse.distinct)


def predict(data: WriteupFigures, figure: Figure, params: Params) -> Prediction:
    """The model's value for one figure, or why it has none."""
    setup = data.setup_of(figure)
    if figure.use is Use.SKIP or figure.value is None:
        return Prediction(figure, None, figure.why)
    if setup.variant is None:
        return Prediction(figure, None, f"not in the catalog: {setup.note}")
    if figure.use is Use.MEMORY:
        return _memory(setup, figure)
    if figure.quantity not in PREDICTED or figure.workload.users is None or figure.workload.prompt_tokens is None:
        return Prediction(figure, None, f"no prediction for {figure.quantity}")
    requests = requests_of(setup, figure, params)
    served = replica(setup, requests, params)
    if isinstance(served, str):
        return Prediction(figure, None, f"the planner refuses it: {served}")
    users = figure.workload.users
    admitted = min(users, setup.max_concurrency.value) if setup.max_concurrency else users
    state = with_users(served, requests, admitted)
    value = _value(figure.quantity, state, users)
    return Prediction(figure, value, _note(setup, figure, served, requests, state))


def _value(quantity: str, state: AtLoad, users: int) -> float:
    if quantity == "request_rate":
        return state.request_rate
    if quantity == "ttft_s":
        return state.ttft_mean_s
    if quantity == "decode_tokens_per_s":
        return 1 / state.tpot_s
    # Users beyond what the platform admits wait in its front end: the closed loop's latency is users / rate.
    return max(state.latency_mean_s, users / state.request_rate) if quantity == "latency_s" else state.latency_mean_s


def _note(setup: Setup, figure: Figure, served: Replica, requests: Requests, state: AtLoad) -> str:
    parts = [f"batch cap {served.batch_cap}"]
    if figure.workload.output_tokens is None:
        parts.append(f"{requests.output_tokens} output tokens (fitted)")
    if state.cached_tokens:
        parts.append(f"{state.cached_tokens:,.0f} of {requests.prompt_tokens:,} prompt tokens cached")
    if served.speculation is not None:
        spec = served.speculation
        parts.append(f"MTP-{spec.draft_tokens} at {spec.tokens_per_step():.2f} tokens a step")
    if setup.max_concurrency and figure.workload.users and figure.workload.users > setup.max_concurrency.value:
        parts.append(f"{setup.max_concurrency.value} admitted")
    if state.host_busy > 0.5:
        parts.append(f"host CPUs {state.host_busy:.0%} busy")
    return ", ".join(parts)


def _memory(setup: Setup, figure: Figure) -> Prediction:
    """Memory figures: the capacity planner, first principles (its runtime overhead an estimate)."""
    plan = plan_capacity(plan_inputs(setup, setup.max_model_len or 4096))
    values = {
        "weights_and_overhead_gib": (plan.weight_bytes + plan.inputs.runtime_overhead_bytes) / GIB,
        "kv_budget_gib": plan.kv_budget_bytes / GIB,
        "kv_cache_tokens": float(plan.capacity_tokens),
        "max_concurrency": plan.max_concurrency,
        "weights_gb": plan.weight_bytes / GB,
    }
    value = values.get(figure.quantity)
    return Prediction(
        figure, value, "capacity planner" if value is not None else f"no planner figure {figure.quantity}"
    )


# --- the fit ------------------------------------------------------------------------------------------------


def fit_figures(data: WriteupFigures, writeups: Iterable[str] | None = None) -> list[Figure]:
    """The figures a fit uses: predicted quantities, checked, unflagged (of the named write-ups only)."""
    chosen = None if writeups is None else set(writeups)
    return [
        f
        for f in data.figures
        if f.use is Use.CHECK
        and not f.flagged
        and f.value
        and f.quantity in PREDICTED
        and (chosen is None or data.setup_of(f).writeup in chosen)
    ]


@dataclass(frozen=True)
class Target:
    """One measured number a fit matches: a write-up figure or a speed record's figure, its value and the
    relative error it is given, which family's factors and which client's time it depends on, and how the model
    predicts it under given factors."""

    id: str
    quantity: str
    value: float
    error: float
    family: str
    client: str
    predict: Callable[[Params], float | None]
    # Whether the prediction depends on the write-up sweeps' unknown output length (the fit's nuisance).
    sweep: bool = False


def _figure_value(data: WriteupFigures, figure: Figure, params: Params) -> float | None:
    return predict(data, figure, params).predicted


def figure_targets(data: WriteupFigures, figures: Sequence[Figure]) -> list[Target]:
    """The write-up figures as targets (what the fit matches)."""
    return [
        Target(
            id=figure.id,
            quantity=figure.quantity,
            value=float(figure.value or 0.0),
            error=figure.error,
            family=_family(data.setup_of(figure)),
            client=data.setup_of(figure).client.name,
            predict=functools.partial(_figure_value, data, figure),
            sweep=figure.workload.output_tokens is None,
        )
        for figure in figures
    ]


# The fitted vector: per family (compute, bandwidth, step_ms), each client's time, the host's time a token.
FAMILY_FACTORS = ("compute", "bandwidth", "step_ms")
STEPS = {"compute": 0.01, "bandwidth": 0.01, "step_ms": 0.1, "client_s": 0.005, "host_us_per_token": 0.5}


def _parameters(families: Sequence[str], clients: Sequence[str]) -> list[Parameter]:
    names = [(family, name) for family in families for name in FAMILY_FACTORS]
    names += [(f"client {client}", "client_s") for client in clients] + [("", "host_us_per_token")]
    return [Parameter(f"{label} {name}".strip(), *BOUNDS[name], STEPS[name]) for label, name in names]


def _vector(params: Params, families: Sequence[str], clients: Sequence[str]) -> list[float]:
    values = [getattr(params.family(family), name) for family in families for name in FAMILY_FACTORS]
    return values + [params.client(client) for client in clients] + [params.host_us_per_token]


def _params(
    vector: Sequence[float], families: Sequence[str], clients: Sequence[str], base: Params, sweep_output_tokens: int
) -> Params:
    """``base`` with the fitted positions of ``vector`` put in (a family or client no target moves keeps its value)."""
    width = len(FAMILY_FACTORS)
    fitted = {
        family: FamilyFactors(**dict(zip(FAMILY_FACTORS, vector[i * width : (i + 1) * width], strict=True)))
        for i, family in enumerate(families)
    }
    rest = vector[len(families) * width :]
    clients_now = dict(base.clients) | dict(zip(clients, rest[:-1], strict=True))
    return Params(
        families=tuple((family, fitted.get(family, factors)) for family, factors in base.families),
        clients=tuple(sorted(clients_now.items())),
        host_us_per_token=rest[-1],
        sweep_output_tokens=sweep_output_tokens,
    )


def robust(z: float) -> float:
    """A residual under the soft-L1 loss, 2 (sqrt(1 + z^2) - 1), as the signed root least squares squares:
    a figure within its error counts as in plain least squares, one ten errors off about as four, so the few
    figures the model cannot explain (a client's ceiling, a copied row) do not decide every factor."""
    return math.copysign(math.sqrt(2.0 * (math.sqrt(1.0 + z * z) - 1.0)), z)


def residuals(targets: Sequence[Target], params: Params) -> list[float]:
    """The robust residual of log(predicted / measured) / the target's error, for each target (a target the model
    cannot predict counts as ten of its errors off)."""
    found = []
    for target in targets:
        predicted = target.predict(params)
        if predicted is None or not target.value or predicted <= 0:
            found.append(robust(10.0))
        else:
            found.append(robust(math.log(predicted / target.value) / target.error))
    return found


def loss(targets: Sequence[Target], params: Params) -> float:
    return sum(r * r for r in residuals(targets, params))


def fit(targets: Sequence[Target], start: Params | None = None) -> Params:
    """Weighted robust least squares in log space over ``targets`` (module docstring): Levenberg-Marquardt on the
    continuous factors, then the best sweep output length at them, then the factors again if it moved."""
    params = start or Params.start()
    families = [family for family in FAMILIES if any(t.family == family for t in targets)]
    clients = sorted({t.client for t in targets if t.client in CLIENTS})
    parameters = _parameters(families, clients)
    width = len(FAMILY_FACTORS)
    depends = [
        [i for i, t in enumerate(targets) if t.family == families[j // width]] for j in range(len(families) * width)
    ]
    depends += [[i for i, t in enumerate(targets) if t.client == client] for client in clients]
    depends += [list(range(len(targets)))]
    low, high = SWEEP_OUTPUT_BOUNDS
    tokens = params.sweep_output_tokens
    for _ in range(2):
        base = params

        def of(vector: Sequence[float], t: int = tokens, b: Params = base) -> list[float]:
            return residuals(targets, _params(vector, families, clients, b, t))

        vector = least_squares.fit(
            of,
            _vector(params, families, clients),
            parameters,
            depends=depends,
        )
        params = _params(vector, families, clients, base, tokens)
        swept = [t for t in targets if t.sweep]
        if not swept:
            break
        tokens = min(range(low, high + 1), key=lambda t: loss(swept, replace(params, sweep_output_tokens=t)))
        if tokens == params.sweep_output_tokens:
            break
        params = replace(params, sweep_output_tokens=tokens)
    return typical_for_unmeasured(targets, params)


# How far a client's time is moved to see whether any target depends on it.
CLIENT_PROBE_S = 0.05


def typical_for_unmeasured(targets: Sequence[Target], params: Params) -> Params:
    """A client none of ``targets`` measures (its only figures are loads above the batch cap, where a closed
    loop's rate no longer depends on the time outside the server) is not fitted by them: it keeps the start
    value, 0.1 s, which is nobody's. It gets the typical client's time instead, the median of the measured ones."""
    base = loss(targets, params)
    unmeasured = [
        client
        for client, seconds in params.clients
        if client in CLIENT_WRITEUPS
        and abs(loss(targets, params.with_client(client, seconds + CLIENT_PROBE_S)) - base) <= 1e-9 * max(base, 1.0)
    ]
    measured = [s for c, s in params.clients if c in CLIENT_WRITEUPS and c not in unmeasured]
    if not unmeasured or not measured:
        return params
    typical = statistics.median(measured)
    for client in unmeasured:
        params = params.with_client(client, typical)
    return params


# --- errors -------------------------------------------------------------------------------------------------


def _summary(label: str, values: list[float]) -> FittedError:
    return FittedError(
        quantity=label,
        figures=len(values),
        median=round(statistics.median(values), 3) if values else None,
        worst=round(max(values), 3) if values else None,
    )


def errors_by(predictions: Iterable[Prediction], key: Callable[[Prediction], str]) -> tuple[FittedError, ...]:
    """Median and worst |error| of the counted predictions, grouped by ``key``."""
    grouped: dict[str, list[float]] = {}
    for prediction in predictions:
        if prediction.counted and prediction.error is not None:
            grouped.setdefault(key(prediction), []).append(abs(prediction.error))
    return tuple(_summary(label, values) for label, values in sorted(grouped.items()))


def kind_of(figure: Figure) -> str:
    """The regime a figure measures: one stream decoding, or a sweep of short or long prompts."""
    workload = figure.workload
    if workload.output_tokens is not None:
        return "single stream"
    assert workload.prompt_tokens is not None
    return "long prompts" if workload.prompt_tokens >= LONG_PROMPT else "short prompts"


@dataclass(frozen=True)
class LeaveOneOut:
    """Each write-up predicted by a fit on the others: the factors each fit found and the predictions."""

    params: dict[str, Params]
    predictions: list[Prediction]


def leave_one_out(data: WriteupFigures, extra: Sequence[Target] = ()) -> LeaveOneOut:
    """Fit on every write-up but one (and the ``extra`` targets: a refit's records), predict that one; for each
    write-up in turn."""
    writeups = sorted({setup.writeup for setup in data.setups.values()})
    found: dict[str, Params] = {}
    predictions: list[Prediction] = []
    for left_out in writeups:
        others = [w for w in writeups if w != left_out]
        params = fit([*figure_targets(data, fit_figures(data, others)), *extra])
        mine = [f for f in data.figures if data.setup_of(f).writeup == left_out]
        measuring = {i for f in mine for i in data.setup_of(f).client.measured_by}
        measured = measure_clients(data, left_out, params)
        found[left_out] = measured
        # The figures that measure the client are predicted as a new client's would be (the typical time); the
        # rest with the client's time they measured.
        predictions += [predict(data, f, params if f.id in measuring else measured) for f in mine]
    return LeaveOneOut(found, predictions)


def measure_clients(data: WriteupFigures, writeup: str, params: Params) -> Params:
    """``params`` with each of the write-up's clients at the time its own single request measured (the
    ``measured_by`` figures, whose TTFT is the client's time, the host's and one prefill step): the time that
    makes the model's prediction of them match, found by bisection (a prediction grows with the client's time).
    A client with no such figure keeps the time ``params`` gives it."""
    clients = {s.client.name: s.client.measured_by for s in data.setups.values() if s.writeup == writeup}
    figures = {f.id: f for f in data.figures}
    low_s, high_s = BOUNDS["client_s"]
    for client, ids in sorted(clients.items()):
        chosen = [figures[i] for i in ids if figures[i].value]
        if not chosen:
            continue

        def gap(
            seconds: float, name: str = client, measuring: Sequence[Figure] = chosen, base: Params = params
        ) -> float:
            trial = base.with_client(name, seconds)
            logs = [math.log((predict(data, f, trial).predicted or 1e-9) / float(f.value or 1.0)) for f in measuring]
            return sum(logs) / len(logs)

        low, high = low_s, high_s
        if gap(low) >= 0 or gap(high) <= 0:
            params = params.with_client(client, low if gap(low) >= 0 else high)
            continue
        for _ in range(30):
            middle = (low + high) / 2
            low, high = (middle, high) if gap(middle) < 0 else (low, middle)
        params = params.with_client(client, (low + high) / 2)
    return params


def kind_errors(
    data: WriteupFigures, predictions: list[Prediction], held_out: list[Prediction]
) -> tuple[KindError, ...]:
    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 3) if values else None

    found = []
    for family in FAMILIES:
        for kind in KINDS:

            def mine(p: Prediction, fam: str = family, k: str = kind) -> bool:
                return p.counted and _family(data.setup_of(p.figure)) == fam and kind_of(p.figure) == k

            fitted = [abs(p.error or 0) for p in predictions if mine(p)]
            loo = [abs(p.error or 0) for p in held_out if mine(p)]
            if fitted:
                found.append(
                    KindError(
                        family=family, kind=kind, figures=len(fitted), median=median(fitted), leave_one_out=median(loo)
                    )
                )
    return tuple(found)


def fitted_record(  # noqa: PLR0917 - the fit, its predictions and how it was checked
    data: WriteupFigures,
    params: Params,
    predictions: list[Prediction],
    held_out: LeaveOneOut,
    day: datetime.date,
    provenance: Provenance | None = None,
) -> FittedEfficiency:
    return FittedEfficiency(
        about="The latency model's factors (serving/latency.py), fitted per accelerator family to the write-up "
        "figures (serving/data/writeup-figures.json) by benchmarks/writeup_figures.py --write, or to those and the "
        "project's speed records by `gemma-verify calibrate --refit`; the errors are |predicted / measured - 1| of "
        "the unflagged figures, by quantity, and on each write-up when a fit never saw it (leave one write-up out). "
        "Re-run it when the figures, the records or the model change.",
        fitted=day,
        method=" ".join((__doc__ or "").split("How the fit works (docs/advisor.md):", 1)[-1].split()),
        families={family: factors.model_copy(update=_rounded(factors)) for family, factors in params.families},
        client_s=round(params.client_s, 4),
        client_s_by_writeup={client: round(value, 4) for client, value in params.clients},
        host_us_per_token=round(params.host_us_per_token, 2),
        sweep_output_tokens=params.sweep_output_tokens,
        sweep_output_bounds=SWEEP_OUTPUT_BOUNDS,
        provenance=provenance
        or Provenance(
            command="python -m benchmarks.writeup_figures --write", figures=len(fit_figures(data)), records=()
        ),
        errors=errors_by(predictions, lambda p: p.figure.quantity),
        errors_leave_one_out=errors_by(held_out.predictions, lambda p: p.figure.quantity),
        errors_by_kind=kind_errors(data, predictions, held_out.predictions),
    )


def _rounded(factors: FamilyFactors) -> dict[str, float]:
    return {
        "compute": round(factors.compute, 4),
        "bandwidth": round(factors.bandwidth, 4),
        "step_ms": round(factors.step_ms, 3),
    }


def rounded_params(params: Params) -> Params:
    """The factors as the file stores them (what every estimate then uses)."""
    return replace(
        params,
        families=tuple((f, factors.model_copy(update=_rounded(factors))) for f, factors in params.families),
        clients=tuple((writeup, round(value, 4)) for writeup, value in params.clients),
        host_us_per_token=round(params.host_us_per_token, 2),
    )


# --- the project's speed records ------------------------------------------------------------------------------

# A record is the project's own bench on the very model, variant and shape: measured, with the bench's trust checks
# passed; 10 % allows for run-to-run spread (its figures weigh as much as the best-kept write-up figures).
RECORD_ERROR = 0.1


def record_targets(records: Sequence[SpeedRecord]) -> list[Target]:
    """Each trusted record's request rate, mean TTFT and mean TPOT as targets, predicted by the record's own
    model, variant, shape, serving arguments (max-num-seqs, batched tokens, KV dtype, MTP), workload (its prompt
    and output tokens, the prefix-cache hits the server counted) and concurrency."""
    found = []
    for record in records:
        family = accelerator_facts(record.accelerator).family
        label = f"{record.model} {record.variant} on {record.shape} @{record.concurrency} ({record.source_file})"
        values = {
            "request_rate": record.request_throughput,
            "ttft_s": None if record.mean_ttft_ms is None else record.mean_ttft_ms / 1000,
            "tpot_s": None if record.mean_tpot_ms is None else record.mean_tpot_ms / 1000,
        }
        for quantity, value in values.items():
            if not value:
                continue
            found.append(
                Target(
                    id=f"{label} {quantity}",
                    quantity=quantity,
                    value=value,
                    error=RECORD_ERROR,
                    family=family,
                    client=RECORDS_CLIENT,
                    predict=functools.partial(_record_value, record, quantity),
                )
            )
    return found


def _record_value(record: SpeedRecord, quantity: str, params: Params) -> float | None:
    state = record_state(record, params)
    if state is None or state.saturated:
        return None
    return {"request_rate": state.request_rate, "ttft_s": state.ttft_mean_s, "tpot_s": state.tpot_s}[quantity]


def record_state(record: SpeedRecord, params: Params) -> AtLoad | None:
    """The model's state for a record's cell under ``params`` (None: the combination no longer fits)."""
    found = _record_replica(record, params)
    if found is None:
        return None
    served, requests = found
    return with_users(served, requests, record.concurrency)


def _record_replica(record: SpeedRecord, params: Params) -> tuple[Replica, Requests] | None:
    args = record.serving_args
    kv_dtype = args.get("--kv-cache-dtype") or "auto"
    sequences = _record_sequences(record, kv_dtype)
    if sequences is None:
        return None
    model = catalog_model(record.model)
    layout = KvLayout.TPU if accelerator_facts(record.accelerator).family == "tpu" else KvLayout.VLLM_HYBRID
    cost = model_cost(model, record.variant, kv_cache_dtype=kv_dtype, tensor_parallel=record.chips, layout=layout)
    hardware = hardware_for(record.accelerator, record.chips, host_vcpus=host_vcpus_of(record.shape))
    efficiency = FittedEfficiency.efficiency_of(
        params.family(hardware.family), params.client(RECORDS_CLIENT), params.host_us_per_token
    )
    seqs = args.get("--max-num-seqs")
    cap = min(int(seqs) if seqs and seqs.isdigit() else DEFAULT_MAX_NUM_SEQS, math.floor(sequences))
    budget = args.get("--max-num-batched-tokens")
    speculation = None
    if record.speculative_tokens:
        counters = (
            Counters(
                record.spec_decode_drafts, record.spec_decode_accepted or 0.0, record.speculative_tokens, record.cite()
            )
            if record.spec_decode_drafts
            else None
        )
        speculation = speculation_for(
            model,
            record.variant,
            record.speculative_tokens,
            kv_cache_dtype=kv_dtype,
            tensor_parallel=record.chips,
            counters=counters,
        )
    served = Replica(
        cost,
        hardware,
        efficiency,
        batch_cap=max(cap, 1),
        batched_tokens=int(budget) if budget and budget.isdigit() else batched_tokens(record.accelerator),
        speculation=speculation,
        kv_sequences=sequences,
    )
    reused = round((record.prefix_cache_hit_rate or 0.0) * record.prompt_tokens)
    return served, Requests(record.prompt_tokens, record.output_tokens, reused_tokens=reused)


@functools.lru_cache(maxsize=256)
def _record_sequences_at(combination: tuple[str, str, str], workload: Workload) -> float | None:
    model, variant, shape = combination
    answer = fit_combination(catalog_model(model), variant, shape_named(shape), workload)
    return float(answer.sequences) if answer.fits and answer.sequences else None


def _record_sequences(record: SpeedRecord, kv_dtype: str) -> float | None:
    """How many requests of the record's size the shape's KV cache holds (the matrix's own answer)."""
    dtype = kv_dtype if kv_dtype != "auto" else "fp8"
    try:
        return _record_sequences_at(
            (record.model, record.variant, record.shape),
            Workload(record.prompt_tokens, record.output_tokens, kv_cache_dtype=dtype),
        )
    except KeyError:
        return None
