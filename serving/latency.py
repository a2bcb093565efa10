"""How fast one vLLM replica serves a workload, from the model's arithmetic and the hardware's peaks.

Why a model and not a table of measurements: users ask about shapes, variants and loads nobody measured.
Every figure here is an *estimate* built from four kinds of facts, written down in docs/advisor.md with
the formulas and the error they showed against measured figures (benchmarks/writeup_figures.py):

* the model (serving/catalog): active parameters (FLOPs per token), the bytes of each weight part (what a
  decode step reads), the attention layers and their sliding windows (what the KV cache holds and reads);
* the hardware: peak dense FLOP/s and memory bandwidth per chip, and how many chips shard the model;
* efficiencies: the share of those peaks vLLM reaches, fitted to measured figures (``Efficiency``);
* the load: concurrent users in a closed loop, or a request rate, and the batch the KV cache admits.

Pure functions, no I/O: the advisor, the matrix and the bench's ceiling checks call the same ones.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from serving.catalog import CatalogModel, catalog
from serving.planner import KvLayout, LayerKind, layer_kv_bytes_per_token

# The percentile the SLO speaks of; the tail formulas below use it.
P95 = 0.95
# vLLM 0.32's default token budget per engine step (--max-num-batched-tokens, chunked prefill on).
DEFAULT_BATCHED_TOKENS = 8192


@dataclass(frozen=True)
class Hardware:
    """What bounds one replica: ``chips`` accelerators sharding the model (tensor parallel), each with its
    peak dense FLOP/s (at the precision the matmuls run in) and memory bandwidth in bytes/s."""

    name: str
    chips: int
    peak_flops: float
    bandwidth: float
    # "gpu" or "tpu": the efficiencies are fitted per family (their compilers and kernels differ).
    family: str = "gpu"

    def __post_init__(self) -> None:
        if self.chips < 1 or self.peak_flops <= 0 or self.bandwidth <= 0:
            raise ValueError(f"hardware needs chips >= 1 and positive peaks, got {self}")


@dataclass(frozen=True)
class Efficiency:
    """The shares of the peaks a real engine reaches, and the time outside the engine.

    ``compute``: achieved / peak FLOP/s in prefill. ``bandwidth``: achieved / peak bytes/s in decode.
    ``client_s``: a request's time outside the engine (network round trip, HTTP, tokenisation), which every
    client-side TTFT includes. Fitted by benchmarks/writeup_figures.py (serving/data/latency-efficiency.json).
    """

    compute: float
    bandwidth: float
    client_s: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.compute <= 1 and 0 < self.bandwidth <= 1) or self.client_s < 0:
            raise ValueError(f"efficiencies must be in (0, 1] and client_s >= 0, got {self}")


# The physical ceiling: every peak reached, nothing outside the engine. A measurement above it is wrong.
PEAK = Efficiency(compute=1.0, bandwidth=1.0)


@dataclass(frozen=True)
class AttentionCost:
    """One decoder layer's attention: query heads x head dim (FLOPs), its window (None: full), and the KV
    bytes a cached token of it costs to read."""

    query_width: int
    window: int | None
    kv_bytes_per_token: int


@dataclass(frozen=True)
class ModelCost:
    """The arithmetic of one model variant on one tensor-parallel group.

    ``active_params``: parameters a token multiplies (a MoE's active experts; Gemma's per-layer embeddings
    are lookups and do not count). ``dense_read_bytes``: weights every decode step reads whatever the batch
    (attention, dense MLPs, router, norms, and the token embeddings, which the tied LM head multiplies in
    full every step). ``expert_bytes``: a MoE's experts; a step reads the share its tokens touch.
    """

    name: str
    active_params: float
    dense_read_bytes: float
    expert_bytes: float = 0.0
    experts: int = 0
    top_k: int = 0
    attention: tuple[AttentionCost, ...] = ()
    # Per-length results of the two sums over layers, which the load model asks for thousands of times.
    _memo: dict[tuple[str, float], float] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def touched_experts(self, batch: float) -> float:
        """Expected share of experts a step of ``batch`` tokens reads: 1 - (1 - k/E)^batch (uniform routing)."""
        if not self.experts:
            return 1.0
        return 1.0 - float((1.0 - self.top_k / self.experts) ** max(batch, 1.0))

    def step_weight_bytes(self, batch: float) -> float:
        return self.dense_read_bytes + self.touched_experts(batch) * self.expert_bytes

    def kv_read_bytes(self, context: float) -> float:
        """KV bytes a decode step reads for one sequence of ``context`` tokens (sliding layers: their window)."""
        key = ("kv", context)
        if key not in self._memo:
            self._memo[key] = self._kv_read_bytes(context)
        return self._memo[key]

    def _kv_read_bytes(self, context: float) -> float:
        return sum(layer.kv_bytes_per_token * min(context, layer.window or context) for layer in self.attention)

    def attention_flops(self, tokens: float) -> float:
        """Attention FLOPs of a causal prefill of ``tokens``: QK^T and AV, 4 x width per (query, key) pair, each
        query attending to min(its position, window) keys."""
        total = 0.0
        for layer in self.attention:
            window = layer.window or tokens
            inside = min(tokens, window)
            pairs = inside * (inside + 1) / 2 + max(tokens - window, 0) * window
            total += 4.0 * layer.query_width * pairs
        return total

    def prefill_flops(self, tokens: float) -> float:
        """2 x active parameters per token (the matmuls) plus causal attention."""
        key = ("prefill", tokens)
        if key not in self._memo:
            self._memo[key] = 2.0 * self.active_params * tokens + self.attention_flops(tokens)
        return self._memo[key]


def _is_tower(what: str) -> bool:
    return any(word in what for word in ("vision", "audio", "encoder"))


def model_cost(
    model: CatalogModel,
    variant: str,
    *,
    kv_cache_dtype: str = "fp8",
    tensor_parallel: int = 1,
    layout: KvLayout = KvLayout.VLLM_HYBRID,
    text_only: bool = False,
) -> ModelCost:
    """A catalog variant's arithmetic. Towers (vision/audio) are read only for images and audio, never per
    decode step; per-layer embeddings are lookups. ``text_only`` changes nothing here (towers are not read
    either way) and is accepted so callers can pass the stack's setting.

    A model of the package's own catalog (frozen, read once) gets its cost built once per variant, KV dtype,
    tensor-parallel size and layout: advise asks it for every offer a variant fits on."""
    del text_only
    if catalog().get(model.id) is model:
        return _catalog_model_cost(model.id, variant, kv_cache_dtype, tensor_parallel, layout)
    return _model_cost(model, variant, kv_cache_dtype=kv_cache_dtype, tensor_parallel=tensor_parallel, layout=layout)


@functools.lru_cache(maxsize=1024)
def _catalog_model_cost(
    model_id: str, variant: str, kv_cache_dtype: str, tensor_parallel: int, layout: KvLayout
) -> ModelCost:
    return _model_cost(
        catalog()[model_id], variant, kv_cache_dtype=kv_cache_dtype, tensor_parallel=tensor_parallel, layout=layout
    )


def _model_cost(
    model: CatalogModel, variant: str, *, kv_cache_dtype: str, tensor_parallel: int, layout: KvLayout
) -> ModelCost:
    parts = model.variant(variant).weights.parts
    weights = model.variant(variant).weights
    experts = sum(part.bytes for part in parts if "experts" in part.what)
    skipped = sum(part.bytes for part in parts if _is_tower(part.what) or "per-layer embeddings" in part.what)
    if parts:
        dense = sum(part.bytes for part in parts) - experts - skipped
    else:  # a checkpoint measured by its total size: all of it is read, less the towers the catalog knows
        dense = weights.bytes - (model.towers.weight_bytes if model.towers else 0)
    text = model.text_config
    architecture = model.architecture
    heads = int(text.get("num_attention_heads", 1))
    head_dim = int(text.get("head_dim", 0) or 0)
    global_dim = int(text.get("global_head_dim", head_dim) or head_dim)
    attention = tuple(
        AttentionCost(
            query_width=heads * (head_dim if layer.kind is LayerKind.SLIDING else global_dim),
            # tpu-inference keeps every token of every layer (serving/planner.py): no window there.
            window=architecture.sliding_window
            if layer.kind is LayerKind.SLIDING and layout is KvLayout.VLLM_HYBRID
            else None,
            kv_bytes_per_token=layer_kv_bytes_per_token(layer, kv_cache_dtype, tp=tensor_parallel, layout=layout),
        )
        for layer in architecture.layers
    )
    return ModelCost(
        name=f"{model.id} {variant}",
        active_params=float(model.parameters.active),
        dense_read_bytes=float(dense),
        expert_bytes=float(experts),
        experts=int(text.get("num_experts") or 0),
        top_k=int(text.get("top_k_experts") or 0),
        attention=attention,
    )


# --- one engine step --------------------------------------------------------------------------------------


def prefill_seconds(
    model: ModelCost, hardware: Hardware, efficiency: Efficiency, tokens: float, *, chunk: int = DEFAULT_BATCHED_TOKENS
) -> float:
    """Engine time to prefill one prompt alone: its FLOPs over the achieved compute, but never less than
    reading the weights once per chunk of ``chunk`` tokens (a short prompt is a bandwidth-bound step)."""
    compute = model.prefill_flops(tokens) / (hardware.chips * hardware.peak_flops * efficiency.compute)
    reads = math.ceil(max(tokens, 1) / chunk) * model.step_weight_bytes(min(tokens, chunk))
    return max(compute, reads / (hardware.chips * hardware.bandwidth * efficiency.bandwidth))


def decode_step_seconds(
    model: ModelCost, hardware: Hardware, efficiency: Efficiency, batch: float, context: float
) -> float:
    """One decode step of ``batch`` sequences of ``context`` tokens: the longer of reading (weights, the touched
    experts, every sequence's KV within its windows) over the achieved bandwidth and computing (2 x active
    parameters per token) over the achieved compute."""
    return _step_seconds(model, hardware, efficiency, batch, model.kv_read_bytes(context))


def _step_seconds(
    model: ModelCost, hardware: Hardware, efficiency: Efficiency, batch: float, kv_per_sequence: float
) -> float:
    batch = max(batch, 1.0)
    read = model.step_weight_bytes(batch) + batch * kv_per_sequence
    read_s = read / (hardware.chips * hardware.bandwidth * efficiency.bandwidth)
    compute_s = batch * 2.0 * model.active_params / (hardware.chips * hardware.peak_flops * efficiency.compute)
    return max(read_s, compute_s)


def decode_ceiling_tokens_per_s(model: ModelCost, hardware: Hardware, batch: float = 1, context: float = 0) -> float:
    """The most output tokens/s ``batch`` streams can get together: every peak reached (bandwidth bounds it)."""
    return max(batch, 1.0) / decode_step_seconds(model, hardware, PEAK, batch, context)


def prefill_ceiling_tokens_per_s(model: ModelCost, hardware: Hardware, tokens: float) -> float:
    """The most prompt tokens/s the compute allows for prompts of ``tokens`` (attention included)."""
    return tokens / (model.prefill_flops(tokens) / (hardware.chips * hardware.peak_flops))


# --- at load -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requests:
    """The workload: prompt and output tokens of a typical request."""

    prompt_tokens: int
    output_tokens: int

    def __post_init__(self) -> None:
        if self.prompt_tokens < 1 or self.output_tokens < 1:
            raise ValueError("prompt_tokens and output_tokens must be >= 1")


@dataclass(frozen=True)
class Replica:
    """One vLLM server as the load model sees it: the model's arithmetic on its hardware at the fitted
    efficiencies, at most ``batch_cap`` sequences running (the KV cache's fit, or --max-num-seqs, whichever is
    smaller) and ``batched_tokens`` prompt tokens per engine step (--max-num-batched-tokens)."""

    model: ModelCost
    hardware: Hardware
    efficiency: Efficiency
    batch_cap: int
    batched_tokens: int = DEFAULT_BATCHED_TOKENS

    def __post_init__(self) -> None:
        if self.batch_cap < 1 or self.batched_tokens < 1:
            raise ValueError(f"batch_cap and batched_tokens must be >= 1, got {self.batch_cap}, {self.batched_tokens}")


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
    # A prompt's own prefill time at this load (its compute, or its chunks' weight reads), without waiting.
    prefill_s: float
    decode_batch: float
    prefill_busy: float
    slots_busy: float
    saturated: bool
    why: str = ""

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


def at_rate(replica: Replica, requests: Requests, rate: float, *, slots: bool = True) -> AtLoad:
    """One replica offered ``rate`` requests/s (Poisson arrivals).

    An engine step reads the weights and the running batch's KV once and computes every token it carries:
    the b decoding sequences' next tokens and chunks of waiting prompts (chunked prefill). Prompt tokens ride
    on steps bound by memory for free until compute binds, so with prefill's share of compute
    rho = rate x p_compute, TPOT(b) = max(read(b), b x compute per token / (1 - rho)); the running batch
    solves b = rate x output x TPOT(b) (Little's law), at most ``batch_cap``. A prompt's own time is
    max(p_compute, chunks x read(b)); prompts wait for the compute one after another, an M/M/1 queue of
    utilisation rho (its tail overstates a deterministic service: safe for a p95). A request holds one of
    ``batch_cap`` slots for its prefill and output x TPOT; beyond them requests wait (Erlang C), unless
    ``slots`` is False (``with_users`` accounts for them itself: a closed loop never offers more than its users).
    """
    model, hardware, efficiency, cap = replica.model, replica.hardware, replica.efficiency, replica.batch_cap
    prompt, output = requests.prompt_tokens, requests.output_tokens
    compute = hardware.chips * hardware.peak_flops * efficiency.compute
    p_compute = model.prefill_flops(prompt) / compute
    prefill_busy = rate * p_compute
    if prefill_busy >= 1.0:
        return _saturated(replica, requests, rate, "prefill compute")
    per_token = 2.0 * model.active_params / compute
    # A decoding sequence holds its prompt and, on average, half its answer.
    kv = model.kv_read_bytes(prompt + output / 2)
    bandwidth = hardware.chips * hardware.bandwidth * efficiency.bandwidth

    def read_s(batch: float) -> float:
        return (model.step_weight_bytes(batch) + batch * kv) / bandwidth

    batch = 1.0
    for _ in range(40):  # the fixed point converges fast: TPOT grows slowly with the batch
        tpot = max(read_s(batch), batch * per_token / (1.0 - prefill_busy))
        following = min(max(rate * output * tpot, 1.0), float(cap))
        if abs(following - batch) < 1e-2 * batch:
            break
        batch = following
    tpot = max(read_s(batch), batch * per_token / (1.0 - prefill_busy))
    own = max(p_compute, math.ceil(prompt / replica.batched_tokens) * read_s(batch))
    queue_mean = queue_p95 = 0.0
    if prefill_busy > 0:
        queue_mean, queue_p95 = _wait_tail(prefill_busy, (1.0 - prefill_busy) / p_compute)
    hold = own + output * tpot
    offered = rate * hold
    if offered >= cap:
        return _saturated(replica, requests, rate, f"{cap} sequence slots")
    slot_mean = slot_p95 = 0.0
    if offered > 0 and slots:
        slot_mean, slot_p95 = _wait_tail(_erlang_c(cap, offered), (cap - offered) / hold)
    return AtLoad(
        request_rate=rate,
        output_tokens=output,
        ttft_mean_s=efficiency.client_s + own + queue_mean + slot_mean,
        ttft_p95_s=efficiency.client_s + own + queue_p95 + slot_p95,
        tpot_s=tpot,
        prefill_s=own,
        decode_batch=batch,
        prefill_busy=prefill_busy,
        slots_busy=offered / cap,
        saturated=False,
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
    """The highest request rate one replica sustains (where prefill or the slots run out), by bisection; cached,
    since a search over replica counts asks it of the same replica and workload each time."""
    low, high = 0.0, 1.0
    while not at_rate(replica, requests, high, slots=slots).saturated:
        low, high = high, high * 2
    for _ in range(30):
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
    prompt's compute; the rest of its prefill time (one step at least) is time away from the queue. Beyond
    ``batch_cap`` the slots stay full and the other users wait their turn, (users - batch_cap) / X, added to TTFT.
    Cached like ``saturation_rate`` (every input is frozen, the answer too): a long-lived caller (the MCP server)
    asks the same replicas the same loads on every advise run."""
    cap = replica.batch_cap
    inside = max(1, round(min(users, float(cap))))
    client = replica.efficiency.client_s
    # Prompts queue for the compute (their FLOPs); short ones share a step, so their own floor is not queued.
    hardware, efficiency = replica.hardware, replica.efficiency
    compute_s = replica.model.prefill_flops(requests.prompt_tokens) / (
        hardware.chips * hardware.peak_flops * efficiency.compute
    )
    edge = saturation_rate(replica, requests, slots=False)
    rate = min(edge, inside / max(client + requests.output_tokens * 1e-3, 1e-3)) * 0.5
    state = at_rate(replica, requests, rate, slots=False)
    wait_mean = wait_p95 = 0.0
    for _ in range(30):
        state = at_rate(replica, requests, min(rate, edge * (1 - 1e-6)), slots=False)
        away = requests.output_tokens * state.tpot_s + (client if users <= cap else 0.0)
        throughput, wait_mean, _ = finite_source_wait(inside, compute_s, away + state.prefill_s - compute_s, tail=False)
        following = min(throughput, edge * (1 - 1e-6))
        if abs(following - rate) < 1e-4 * rate:
            rate = following
            break
        rate = (rate + following) / 2
    state = at_rate(replica, requests, rate, slots=False)
    away = requests.output_tokens * state.tpot_s + (client if users <= cap else 0.0)
    _, wait_mean, wait_p95 = finite_source_wait(inside, compute_s, away + state.prefill_s - compute_s)
    extra = (users - cap) / rate if users > cap else 0.0
    return dataclasses.replace(
        state,
        ttft_mean_s=client + state.prefill_s + wait_mean + extra,
        ttft_p95_s=client + state.prefill_s + wait_p95 + extra,
        slots_busy=1.0 if users > cap else state.slots_busy,
    )
