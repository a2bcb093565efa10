"""How fast one vLLM replica serves a workload, from the model's arithmetic and the hardware's peaks.

Why a model and not a table of measurements: users ask about shapes, variants and loads nobody measured.
Every figure here is an *estimate* built from five kinds of facts, written down in docs/advisor.md with
the formulas, their sources and the error they showed against measured figures (benchmarks/writeup_figures.py):

* the model (serving/model_cost.py from serving/catalog): active parameters (FLOPs per token), the bytes of
  each weight part (what a decode step reads), the attention layers and their windows, a MoE's experts, the
  MTP drafter;
* the hardware: peak dense FLOP/s and memory bandwidth per chip, how many chips shard the model and the
  interconnect their all-reduces cross, the host's vCPUs;
* efficiencies: the share of those peaks vLLM reaches, its fixed time per forward pass and the host's time per
  prompt token, fitted to measured figures per accelerator family (``Efficiency``);
* the workload: prompt and output tokens, and how many of each prompt's tokens the prefix cache can serve;
* the load: concurrent users in a closed loop, or a request rate, and the batch the KV cache admits.

Pure functions, no I/O: the advisor, the matrix and the bench's ceiling checks call the same ones.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from serving.model_cost import AttentionCost, ModelCost, chunks, model_cost

__all__ = [
    "P95",
    "PEAK",
    "AtLoad",
    "AttentionCost",
    "Efficiency",
    "Hardware",
    "Interconnect",
    "ModelCost",
    "Replica",
    "Requests",
    "Speculation",
    "acceptance_from_counters",
    "at_rate",
    "decode_ceiling_tokens_per_s",
    "decode_step_seconds",
    "model_cost",
    "prefill_ceiling_tokens_per_s",
    "prefill_seconds",
    "saturation_rate",
    "with_users",
]

# The percentile the SLO speaks of; the tail formulas below use it.
P95 = 0.95
# vLLM 0.32's default token budget per engine step (--max-num-batched-tokens, chunked prefill on).
DEFAULT_BATCHED_TOKENS = 8192
# Megatron-style tensor parallelism all-reduces twice per decoder layer (after attention's output projection
# and after the MLP's down projection): Shoeybi et al. 2019, "Megatron-LM", section 3; vLLM's RowParallelLinear.
ALLREDUCES_PER_LAYER = 2


@dataclass(frozen=True)
class Interconnect:
    """How the chips of one tensor-parallel group exchange activations (PCIe, NVLink, ICI): the bandwidth
    each chip sends at, one direction, bytes/s, and the fixed time of one all-reduce of a small message."""

    kind: str
    bandwidth: float
    latency_s: float

    def __post_init__(self) -> None:
        if self.bandwidth <= 0 or self.latency_s < 0:
            raise ValueError(f"an interconnect needs a positive bandwidth and latency >= 0, got {self}")

    def allreduce_seconds(self, chips: int, payload: float) -> float:
        """One ring all-reduce of ``payload`` bytes over ``chips``: each chip sends 2 (n - 1) / n of it
        (reduce-scatter, then all-gather), after the collective's fixed latency."""
        if chips <= 1:
            return 0.0
        return self.latency_s + 2.0 * (chips - 1) / chips * payload / self.bandwidth


@dataclass(frozen=True)
class Hardware:
    """What bounds one replica: ``chips`` accelerators sharding the model (tensor parallel), each with its
    peak dense FLOP/s (at the precision the matmuls run in) and memory bandwidth in bytes/s, the interconnect
    their all-reduces cross, and the host's vCPUs, which tokenise every prompt."""

    name: str
    chips: int
    peak_flops: float
    bandwidth: float
    # "gpu" or "tpu": the efficiencies are fitted per family (their compilers and kernels differ).
    family: str = "gpu"
    interconnect: Interconnect | None = None
    host_vcpus: int | None = None

    def __post_init__(self) -> None:
        if self.chips < 1 or self.peak_flops <= 0 or self.bandwidth <= 0:
            raise ValueError(f"hardware needs chips >= 1 and positive peaks, got {self}")
        if self.chips > 1 and self.interconnect is None:
            raise ValueError(f"{self.name}: {self.chips} chips in tensor parallel need an interconnect")
        if self.host_vcpus is not None and self.host_vcpus < 1:
            raise ValueError(f"{self.name}: host_vcpus must be >= 1")

    def allreduce_seconds(self, payload: float) -> float:
        return 0.0 if self.interconnect is None else self.interconnect.allreduce_seconds(self.chips, payload)


@dataclass(frozen=True)
class Efficiency:
    """The shares of the peaks a real engine reaches, its fixed costs, and the time outside the engine.

    ``compute``: achieved / peak FLOP/s. ``bandwidth``: achieved / peak bytes/s. ``step_s``: the fixed time of
    one forward pass (kernel launches or graph replay, the host's scheduling and sampling), paid by every
    decode step and every drafter pass. ``host_s_per_token``: host CPU seconds one prompt token costs before
    the engine sees it (tokenisation and input processing, one vCPU; cached or not). ``client_s``: a request's
    time outside the server (network round trip, HTTP), which every client-side TTFT includes. Fitted per
    accelerator family by benchmarks/writeup_figures.py (serving/data/latency-efficiency.json).
    """

    compute: float
    bandwidth: float
    client_s: float = 0.0
    step_s: float = 0.0
    host_s_per_token: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.compute <= 1 and 0 < self.bandwidth <= 1):
            raise ValueError(f"efficiencies must be in (0, 1], got {self}")
        if self.client_s < 0 or self.step_s < 0 or self.host_s_per_token < 0:
            raise ValueError(f"client_s, step_s and host_s_per_token must be >= 0, got {self}")


# The physical ceiling: every peak reached, nothing outside the engine. A measurement above it is wrong.
PEAK = Efficiency(compute=1.0, bandwidth=1.0)


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding (MTP): the drafter proposes ``draft_tokens`` tokens one forward pass each, the
    target verifies all of them and one of its own in one pass, and keeps the drafted tokens up to the first
    it rejects. ``acceptance`` is the chance a drafted token is kept given its predecessors were (per position,
    assumed equal at every position)."""

    draft_tokens: int
    acceptance: float
    drafter: ModelCost
    # Where the acceptance comes from (a record's counters, or a default with its source).
    source: str = ""

    def __post_init__(self) -> None:
        if self.draft_tokens < 1 or not 0.0 <= self.acceptance < 1.0:
            raise ValueError(f"speculation needs draft_tokens >= 1 and acceptance in [0, 1), got {self}")

    def tokens_per_step(self) -> float:
        """Expected tokens a step emits: 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a) (Leviathan et al.
        2023, "Fast Inference from Transformers via Speculative Decoding", eq. 1)."""
        alpha, k = self.acceptance, self.draft_tokens
        return float(sum(alpha**i for i in range(k + 1)))


def acceptance_from_counters(drafts: float, accepted: float, draft_tokens: int) -> float:
    """The per-position acceptance that makes ``accepted / drafts`` tokens accepted per draft of ``draft_tokens``
    (vLLM's `vllm:spec_decode_num_drafts` and `..._num_accepted_tokens` counters), solved by bisection."""
    if drafts <= 0 or draft_tokens < 1:
        raise ValueError("acceptance needs drafts > 0 and draft_tokens >= 1")
    mean = min(accepted / drafts, draft_tokens * (1 - 1e-9))
    low, high = 0.0, 1.0 - 1e-9
    for _ in range(60):
        middle = (low + high) / 2
        if sum(middle**i for i in range(1, draft_tokens + 1)) < mean:
            low = middle
        else:
            high = middle
    return low


# --- one engine step --------------------------------------------------------------------------------------


def _forward_seconds(  # noqa: PLR0917 - one forward pass and what it reads and computes
    model: ModelCost,
    hardware: Hardware,
    efficiency: Efficiency,
    tokens: float,
    kv_bytes: float,
    compute_share: float = 1.0,
) -> float:
    """One forward pass over ``tokens`` tokens reading ``kv_bytes`` of KV: the longer of reading (weights, the
    touched experts, the KV) over the achieved bandwidth and computing (2 x active parameters a token) over the
    achieved compute left to it (``compute_share``), plus the all-reduces and the pass's fixed time."""
    read_s = (model.step_weight_bytes(tokens) + kv_bytes) / (hardware.chips * hardware.bandwidth * efficiency.bandwidth)
    compute_s = tokens * 2.0 * model.active_params / (hardware.chips * hardware.peak_flops * efficiency.compute)
    comm_s = ALLREDUCES_PER_LAYER * model.layers * hardware.allreduce_seconds(model.allreduce_bytes(tokens))
    return max(read_s, compute_s / compute_share) + comm_s + efficiency.step_s


def decode_step(  # noqa: PLR0917 - a step is all of these
    model: ModelCost,
    hardware: Hardware,
    efficiency: Efficiency,
    batch: float,
    context: float,
    speculation: Speculation | None = None,
    compute_share: float = 1.0,
) -> tuple[float, float]:
    """(seconds, tokens each sequence gains) of one decode step of ``batch`` sequences of ``context`` tokens.
    With speculation: the drafter's k passes over the batch, then the target's pass over k + 1 tokens of each
    sequence (the verification: more compute and touched experts, the same weights and KV read once)."""
    batch = max(batch, 1.0)
    kv = batch * model.kv_read_bytes(context)
    if speculation is None:
        return _forward_seconds(model, hardware, efficiency, batch, kv, compute_share), 1.0
    k = speculation.draft_tokens
    verify = _forward_seconds(model, hardware, efficiency, batch * (k + 1), kv, compute_share)
    drafter = speculation.drafter
    draft = _forward_seconds(
        drafter, hardware, efficiency, batch, batch * drafter.kv_read_bytes(context), compute_share
    )
    return verify + k * draft, speculation.tokens_per_step()


def decode_step_seconds(
    model: ModelCost, hardware: Hardware, efficiency: Efficiency, batch: float, context: float
) -> float:
    """One decode step of ``batch`` sequences of ``context`` tokens, without speculation."""
    return decode_step(model, hardware, efficiency, batch, context)[0]


def _prefill_compute_seconds(
    model: ModelCost, hardware: Hardware, efficiency: Efficiency, tokens: float, cached: float = 0.0
) -> float:
    """The compute a prompt's uncached tokens need (their matmuls and their attention over the whole prompt)
    and their all-reduces: the part of a prefill no other prompt can share."""
    flops = model.prefill_flops_after(tokens, cached)
    compute_s = flops / (hardware.chips * hardware.peak_flops * efficiency.compute)
    fresh = max(tokens - cached, 1.0)
    comm_s = ALLREDUCES_PER_LAYER * model.layers * hardware.allreduce_seconds(model.allreduce_bytes(fresh))
    return compute_s + comm_s


def prefill_seconds(
    model: ModelCost,
    hardware: Hardware,
    efficiency: Efficiency,
    tokens: float,
    *,
    chunk: int = DEFAULT_BATCHED_TOKENS,
    cached: float = 0.0,
) -> float:
    """Engine time to prefill one prompt alone: its uncached tokens' compute, but never less than one forward
    pass per chunk of ``chunk`` tokens (a short prompt is a bandwidth-bound step)."""
    compute = _prefill_compute_seconds(model, hardware, efficiency, tokens, cached)
    fresh = max(tokens - cached, 1.0)
    step = _forward_seconds(model, hardware, efficiency, min(fresh, chunk), 0.0)
    return max(compute, chunks(fresh, chunk) * step)


def decode_ceiling_tokens_per_s(model: ModelCost, hardware: Hardware, batch: float = 1, context: float = 0) -> float:
    """The most output tokens/s ``batch`` streams can get together without speculation: every peak reached,
    nothing fixed, no all-reduce (bandwidth bounds it)."""
    batch = max(batch, 1.0)
    read = model.step_weight_bytes(batch) + batch * model.kv_read_bytes(context)
    compute = batch * 2.0 * model.active_params / (hardware.chips * hardware.peak_flops)
    return batch / max(read / (hardware.chips * hardware.bandwidth), compute)


def prefill_ceiling_tokens_per_s(model: ModelCost, hardware: Hardware, tokens: float, cached: float = 0.0) -> float:
    """The most prompt tokens/s the compute allows for prompts of ``tokens`` whose first ``cached`` the prefix
    cache serves (attention included)."""
    return tokens / (model.prefill_flops_after(tokens, cached) / (hardware.chips * hardware.peak_flops))


# --- at load -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requests:
    """The workload: prompt and output tokens of a typical request, and its prefix reuse.

    ``reused_tokens``: how many of each prompt's leading tokens another request already sent (a shared system
    prompt, the conversation so far, a benchmark that resends its prompts); 0 for unknown traffic.
    ``distinct_prefixes``: how many different such prefixes are in play at once (1 for one system prompt,
    the users for per-user histories): their KV is the working set the cache must keep for the hits.
    """

    prompt_tokens: int
    output_tokens: int
    reused_tokens: int = 0
    distinct_prefixes: int = 1

    def __post_init__(self) -> None:
        if self.prompt_tokens < 1 or self.output_tokens < 1:
            raise ValueError("prompt_tokens and output_tokens must be >= 1")
        if not 0 <= self.reused_tokens <= self.prompt_tokens or self.distinct_prefixes < 1:
            raise ValueError("reused_tokens must be within 0..prompt_tokens and distinct_prefixes >= 1")


@dataclass(frozen=True)
class Replica:
    """One vLLM server as the load model sees it: the model's arithmetic on its hardware at the fitted
    efficiencies, at most ``batch_cap`` sequences running (the KV cache's fit, or --max-num-seqs, whichever is
    smaller), ``batched_tokens`` prompt tokens per engine step (--max-num-batched-tokens), speculative decoding
    if any, and ``kv_sequences``: how many sequences of the workload's size its KV cache holds (what the prefix
    cache's working set competes for; None: ``batch_cap``)."""

    model: ModelCost
    hardware: Hardware
    efficiency: Efficiency
    batch_cap: int
    batched_tokens: int = DEFAULT_BATCHED_TOKENS
    speculation: Speculation | None = None
    kv_sequences: float | None = None

    def __post_init__(self) -> None:
        if self.batch_cap < 1 or self.batched_tokens < 1:
            raise ValueError(f"batch_cap and batched_tokens must be >= 1, got {self.batch_cap}, {self.batched_tokens}")

    def cached_tokens(self, requests: Requests, batch: float) -> float:
        """Expected prompt tokens the prefix cache serves with ``batch`` sequences running.

        The reused prefixes hit while their KV stays cached: the running sequences' own tokens (all but their
        shared prefix) take ``batch`` x their share of the cache and the prefixes' working set
        (``distinct_prefixes`` x ``reused_tokens``) gets what is left, so a working set larger than that hits
        in proportion (the share of it an LRU cache keeps under uniform reuse). A hit covers whole blocks of
        ``model.hit_block`` tokens and never the last prompt token, which vLLM recomputes for its logits; with
        speculative decoding it also drops the last hit block, which the drafter's lookahead may have written
        (the "last-block drop" of vllm/v1/core/kv_cache_coordinator.py)."""
        reused = min(requests.reused_tokens, requests.prompt_tokens - 1)
        blocks = math.floor(reused / self.model.hit_block) - (1 if self.speculation is not None else 0)
        aligned = max(blocks, 0) * self.model.hit_block
        if aligned <= 0:
            return 0.0
        sequence = requests.prompt_tokens + requests.output_tokens
        capacity = (self.kv_sequences if self.kv_sequences is not None else self.batch_cap) * sequence
        private = requests.prompt_tokens - requests.reused_tokens + requests.output_tokens / 2
        free = capacity - max(batch, 1.0) * private
        working = requests.distinct_prefixes * requests.reused_tokens
        share = min(max(free / working, 0.0), 1.0)
        return share * aligned

    def host_seconds(self, requests: Requests) -> float:
        """Host CPU time one request's prompt costs (tokenisation and input processing, one vCPU)."""
        return self.efficiency.host_s_per_token * requests.prompt_tokens


@dataclass(frozen=True)
class AtLoad:
    """One replica at a load: the request rate it serves, latencies, and the engine's state.

    ``saturated``: the offered load exceeds what the replica can serve (no steady state); latencies are then
    infinite and ``why`` says which resource ran out.
    """

    request_rate: float
    output_tokens: int
    ttft_mean_s: float
    ttft_p95_s: float
    tpot_s: float
    # A prompt's own prefill time at this load (its compute, or its chunks' steps), without waiting.
    prefill_s: float
    decode_batch: float
    prefill_busy: float
    slots_busy: float
    saturated: bool
    why: str = ""
    # Prompt tokens the prefix cache served, per request, and the host CPUs' utilisation.
    cached_tokens: float = 0.0
    host_busy: float = 0.0

    @property
    def latency_mean_s(self) -> float:
        """Mean time from sending a request to its last token, as a closed-loop client sees it."""
        return self.ttft_mean_s + self.tpot_s * max(self.output_tokens - 1, 0)

    @property
    def output_tokens_per_s(self) -> float:
        return self.request_rate * self.output_tokens


def _erlang_c(servers: int, offered: float) -> float:
    """Probability an arrival waits in an M/M/c queue with ``servers`` and ``offered`` = lambda x S (< servers)."""
    blocking = 1.0  # Erlang B by its recurrence, stable for hundreds of servers
    for k in range(1, servers + 1):
        blocking = offered * blocking / (k + offered * blocking)
    rho = offered / servers
    return blocking / (1.0 - rho + rho * blocking)


def _wait_tail(probability_wait: float, drain_rate: float) -> tuple[float, float]:
    """(mean, p95) wait of an M/M/c-type queue: P(W > t) = C e^(-drain t), drain = c mu - lambda."""
    mean = probability_wait / drain_rate
    p95 = math.log(probability_wait / (1.0 - P95)) / drain_rate if probability_wait > 1.0 - P95 else 0.0
    # Where fewer than 5 % wait the p95 wait is 0; the mean is kept as a floor so a p95 is never below a mean.
    return mean, max(p95, mean)


@dataclass(frozen=True)
class _Engine:
    """The pieces of a replica's state at one batch size that ``at_rate`` solves for."""

    tpot: float
    step: float
    cached: float
    p_compute: float


def _engine_at(replica: Replica, requests: Requests, batch: float, rate: float) -> _Engine:
    """TPOT, step time, cached tokens and a prompt's compute with ``batch`` sequences decoding; prompt tokens
    ride on steps bound by memory for free until compute binds (chunked prefill), so decode gets the compute
    prefill leaves (1 - rho)."""
    model, hardware, efficiency = replica.model, replica.hardware, replica.efficiency
    cached = replica.cached_tokens(requests, batch)
    p_compute = _prefill_compute_seconds(model, hardware, efficiency, requests.prompt_tokens, cached)
    rho = rate * p_compute
    # A decoding sequence holds its prompt and, on average, half its answer.
    context = requests.prompt_tokens + requests.output_tokens / 2
    step, tokens = decode_step(
        model, hardware, efficiency, batch, context, replica.speculation, compute_share=max(1.0 - rho, 1e-9)
    )
    return _Engine(tpot=step / tokens, step=step, cached=cached, p_compute=p_compute)


def _root(
    g: Callable[[float], float],
    low: float,
    high: float,
    g_low: float,
    g_high: float,
    *,
    positive: bool = False,
    tolerance: float = 1e-5,
) -> float:
    """Where ``g`` changes sign on [low, high] (g_low > 0 >= g_high), by regula falsi with the Illinois
    modification: superlinear for the smooth, monotone functions the load model solves, and never outside;
    ``tolerance`` relative to the root. ``positive``: return the bracket's positive end (where ``g`` jumps to
    negative, e.g. at saturation)."""
    for _ in range(60):
        middle = high - g_high * (high - low) / (g_high - g_low) if g_high != g_low else (low + high) / 2
        if not low < middle < high:
            middle = (low + high) / 2
        g_middle = g(middle)
        if abs(g_middle) <= tolerance * max(abs(middle), 1e-9) and (g_middle > 0 or not positive):
            return middle
        if g_middle > 0:
            low, g_low = middle, g_middle
            g_high /= 2
        else:
            high, g_high = middle, g_middle
            g_low /= 2
        if high - low <= 1e-7 * max(abs(high), 1e-9):
            break
    return low if positive else (low + high) / 2


def _running_batch(replica: Replica, requests: Requests, rate: float) -> tuple[float, _Engine]:
    """The running batch b = rate x output x TPOT(b) (Little's law), within [1, batch_cap], and the engine there."""
    cap = float(replica.batch_cap)
    found: dict[float, _Engine] = {}

    def engine(batch: float) -> _Engine:
        if batch not in found:
            found[batch] = _engine_at(replica, requests, batch, rate)
        return found[batch]

    def excess(batch: float) -> float:
        return min(max(rate * requests.output_tokens * engine(batch).tpot, 1.0), cap) - batch

    at_one = excess(1.0)
    if at_one <= 1e-9 or cap <= 1.0:
        return 1.0, engine(1.0)
    at_cap = excess(cap)
    if at_cap >= 0:
        return cap, engine(cap)
    # A thousandth of a sequence moves TPOT far less than the closed loop's own tolerance.
    batch = _root(excess, 1.0, cap, at_one, at_cap, tolerance=1e-3)
    return batch, engine(batch)


def at_rate(replica: Replica, requests: Requests, rate: float, *, slots: bool = True) -> AtLoad:
    """One replica offered ``rate`` requests/s (Poisson arrivals).

    An engine step reads the weights and the running batch's KV once and computes every token it carries:
    the b decoding sequences' next tokens and chunks of waiting prompts (chunked prefill). Prompt tokens ride
    on steps bound by memory for free until compute binds, so with prefill's share of compute
    rho = rate x p_compute (the uncached tokens' compute), TPOT(b) = step(b) / tokens a step, the step's compute
    stretched by 1 / (1 - rho); the running batch solves b = rate x output x TPOT(b) (Little's law), at most
    ``batch_cap``. A prompt's own time is max(p_compute, chunks x step(b)); prompts wait for the compute one
    after another, an M/M/1 queue of utilisation rho (its tail overstates a deterministic service: safe for a
    p95). Before the engine, the host tokenises each prompt on one of its vCPUs (an M/M/c queue). A request
    holds one of ``batch_cap`` slots for its prefill and output x TPOT; beyond them requests wait (Erlang C),
    unless ``slots`` is False (``with_users`` accounts for them itself: a closed loop never offers more than its
    users).
    """
    cap = replica.batch_cap
    output = requests.output_tokens
    host_s = replica.host_seconds(requests)
    # The host's vCPUs tokenise prompts side by side; with their count unknown, only each prompt's own time counts.
    vcpus = replica.hardware.host_vcpus
    host_busy = rate * host_s / vcpus if vcpus else 0.0
    if host_busy >= 1.0:
        return _saturated(replica, requests, rate, f"host's {vcpus} vCPUs (tokenising prompts)")
    batch, engine = _running_batch(replica, requests, rate)
    prefill_busy = rate * engine.p_compute
    if prefill_busy >= 1.0:
        return _saturated(replica, requests, rate, "prefill compute")
    fresh = max(requests.prompt_tokens - engine.cached, 1.0)
    own = max(engine.p_compute, chunks(fresh, replica.batched_tokens) * engine.step)
    queue_mean = queue_p95 = 0.0
    if prefill_busy > 0:
        queue_mean, queue_p95 = _wait_tail(prefill_busy, (1.0 - prefill_busy) / engine.p_compute)
    host_mean = host_p95 = 0.0
    if vcpus and host_busy > 0:
        host_mean, host_p95 = _wait_tail(_erlang_c(vcpus, rate * host_s), (vcpus - rate * host_s) / host_s)
    hold = own + output * engine.tpot
    offered = rate * hold
    if offered >= cap:
        return _saturated(replica, requests, rate, f"{cap} sequence slots")
    slot_mean = slot_p95 = 0.0
    if offered > 0 and slots:
        slot_mean, slot_p95 = _wait_tail(_erlang_c(cap, offered), (cap - offered) / hold)
    before = replica.efficiency.client_s + host_s
    return AtLoad(
        request_rate=rate,
        output_tokens=output,
        ttft_mean_s=before + host_mean + own + queue_mean + slot_mean,
        ttft_p95_s=before + host_p95 + own + queue_p95 + slot_p95,
        tpot_s=engine.tpot,
        prefill_s=own,
        decode_batch=batch,
        prefill_busy=prefill_busy,
        slots_busy=offered / cap,
        saturated=False,
        cached_tokens=engine.cached,
        host_busy=host_busy,
    )


def _saturated(replica: Replica, requests: Requests, rate: float, resource: str) -> AtLoad:
    return AtLoad(
        request_rate=rate,
        output_tokens=requests.output_tokens,
        ttft_mean_s=math.inf,
        ttft_p95_s=math.inf,
        tpot_s=math.inf,
        prefill_s=math.inf,
        decode_batch=float(replica.batch_cap),
        prefill_busy=1.0,
        slots_busy=1.0,
        saturated=True,
        why=f"{rate:.3g} req/s is more than one replica serves: its {resource} run out",
    )


@functools.lru_cache(maxsize=4096)
def saturation_rate(replica: Replica, requests: Requests, *, slots: bool = True) -> float:
    """The highest request rate one replica sustains (where prefill, the host or the slots run out), by
    bisection; cached, since a search over replica counts asks it of the same replica and workload each time."""
    low, high = 0.0, 1.0
    while not at_rate(replica, requests, high, slots=slots).saturated:
        low, high = high, high * 2
    for _ in range(20):
        middle = (low + high) / 2
        if at_rate(replica, requests, middle, slots=slots).saturated:
            high = middle
        else:
            low = middle
    return low


def finite_source_wait(users: int, service_s: float, away_s: float, *, tail: bool = True) -> tuple[float, float, float]:
    """(throughput, mean wait, p95 wait) of one server shared by ``users`` who each come back ``away_s`` after
    being served (M/M/1//N, the machine-repairman model): the prefill queue of a closed loop. With few users a
    request rarely finds more than one prompt ahead of it; a Poisson queue at the same rate would say otherwise.

    Stationary: pi_k proportional to N!/(N-k)! (S/Z)^k; an arriving user sees the queue of N-1 users (arrival
    theorem); its wait behind k prompts is Erlang(k, 1/S)."""
    users = max(users, 1)
    ratio = service_s / away_s if away_s > 0 else math.inf
    if math.isinf(ratio):
        return 1.0 / service_s, (users - 1) * service_s, (users - 1) * service_s

    def stationary(n: int) -> list[float]:
        weights = [1.0]
        for k in range(1, n + 1):
            weights.append(weights[-1] * (n - k + 1) * ratio)
        total = sum(weights)
        return [w / total for w in weights]

    throughput = (1.0 - stationary(users)[0]) / service_s
    seen = stationary(users - 1)
    mean = sum(k * p for k, p in enumerate(seen)) * service_s

    def over(t: float) -> float:
        """P(wait > t) = sum_k p_k e^-x sum_{j<k} x^j / j!, x = t / S."""
        x = t / service_s
        total = partial = 0.0
        term = 1.0  # x^(k-1) / (k-1)!
        for k in range(1, len(seen)):
            partial += term
            total += seen[k] * partial
            term *= x / k
        return total * math.exp(-x)

    if not tail or over(0.0) <= 1.0 - P95:
        return throughput, mean, mean
    low, high = 0.0, service_s * (users + 10)
    for _ in range(40):
        middle = (low + high) / 2
        if over(middle) > 1.0 - P95:
            low = middle
        else:
            high = middle
    return throughput, mean, max(high, mean)


@functools.lru_cache(maxsize=4096)
def with_users(replica: Replica, requests: Requests, users: float) -> AtLoad:
    """One replica with ``users`` concurrent users in a closed loop (each sends its next request when its last
    answer ends, no think time). Up to ``batch_cap`` of them are inside the engine: their prompts share the
    compute as a finite-source queue (``finite_source_wait``) while the others decode; the loop's rate X and the
    engine's state at X (``at_rate``, without its Poisson queues) are solved together. The queue's service is a
    prompt's compute; the rest of its prefill time (one step at least), the host's tokenising and the client's
    time are time away from it. Whatever holds the loop back beyond that (slots, the host's vCPUs) shows as
    waiting: a closed loop obeys Little's law, users = X x latency, and the difference is added to TTFT.
    Cached like ``saturation_rate`` (every input is frozen, the answer too): a long-lived caller (the MCP server)
    asks the same replicas the same loads on every advise run."""
    cap = replica.batch_cap
    inside = max(1, round(min(users, float(cap))))
    client = replica.efficiency.client_s
    host_s = replica.host_seconds(requests)
    decoding = max(requests.output_tokens - 1, 0)

    def throughput(rate: float) -> float:
        """The loop's throughput with the engine at ``rate`` (0 where the engine cannot serve ``rate``): it falls
        as the rate rises, and the loop's own rate is where the two meet."""
        state = at_rate(replica, requests, rate, slots=False)
        if state.saturated:
            return 0.0
        compute_s = _prompt_compute(replica, requests, state)
        away = decoding * state.tpot_s + host_s + (client if users <= cap else 0.0)
        found, _, _ = finite_source_wait(inside, compute_s, away + state.prefill_s - compute_s, tail=False)
        return found

    # An idle engine bounds the loop's rate from above; the rate where the engine saturates, if lower, is the
    # answer itself (the root search lands on the last rate it serves).
    idle = throughput(1e-9)
    high = idle
    at_high = throughput(high) - high
    rate = high if at_high >= 0 else _root(lambda r: throughput(r) - r, 1e-9, high, idle, at_high, positive=True)
    state = at_rate(replica, requests, rate, slots=False)
    compute_s = _prompt_compute(replica, requests, state)
    away = decoding * state.tpot_s + host_s + (client if users <= cap else 0.0)
    _, wait_mean, wait_p95 = finite_source_wait(inside, compute_s, away + state.prefill_s - compute_s)
    ttft = client + host_s + state.prefill_s + wait_mean
    latency = ttft + state.tpot_s * decoding
    # Little's law for the loop: what the users' cycle leaves unexplained, they spent waiting for a slot or a vCPU.
    extra = max(users / rate - latency, 0.0)
    return dataclasses.replace(
        state,
        ttft_mean_s=ttft + extra,
        ttft_p95_s=client + host_s + state.prefill_s + wait_p95 + extra,
        slots_busy=1.0 if users > cap else state.slots_busy,
    )


def _prompt_compute(replica: Replica, requests: Requests, state: AtLoad) -> float:
    """A prompt's compute at this state (its uncached tokens), the service of the closed loop's prefill queue."""
    return _prefill_compute_seconds(
        replica.model, replica.hardware, replica.efficiency, requests.prompt_tokens, state.cached_tokens
    )
