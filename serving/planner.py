"""Will it fit? The memory and KV-cache capacity of one vLLM deployment, computed before `pulumi up`.

Why: the costliest failures of the hand-made deployments surfaced only after a ten-minute rollout
(bf16 12B weights filling a 24 GB L4, 16K contexts out of memory, a TPU node whose context limit was
below the benchmark's). This module answers the same question vLLM answers at start-up ("KV cache
size: N tokens, maximum concurrency for max_model_len tokens per request: Yx"), from numbers we have
before deploying. It is pure arithmetic: no Pulumi, no files, no network.

How a sequence's KV cache is counted (per-token versus per-sequence):

* A full-attention layer stores every token of a sequence: its cost grows linearly with length.
* A sliding-window layer (vLLM's hybrid KV cache manager, CUDA and CPU) keeps only the window, plus
  the tokens scheduled but not yet settled: vLLM 0.32 reserves `window - 1 + in_flight` tokens per
  request, in_flight = max_num_batched_tokens x concurrent batches (2 with async scheduling), plus
  one block because a window rarely starts on a block boundary (`SlidingWindowSpec` in
  vllm/v1/kv_cache_interface.py). So a sliding layer's cost is per *sequence*, not per token.
* A KV-shared layer (Gemma 4's `num_kv_shared_layers`, every layer of a Gemma 4 MTP drafter) reads
  another layer's cache and stores nothing.
* On TPU (tpu-inference) sliding windows are disabled when layers have different head sizes, as
  Gemma 4's do, so every layer stores every token; KV heads are padded to the tensor-parallel size,
  K and V slots to the dtype's 32-bit packing, head dims to 128, and every layer is counted at the
  largest layer's page (the reading that reproduces the TPU v6e-4 figures our users recorded; see
  docs/capacity-planning.md).

The figure called "KV per token" is therefore the KV bytes of one `max_model_len` sequence divided by
`max_model_len`: the average cost of a token in a full-length sequence. Capacity in tokens is reported
the way vLLM reports it: maximum concurrency x max_model_len.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass

from serving.units import GB, GIB


class LayerKind(enum.StrEnum):
    """The attention type of one decoder layer, as `config.json`'s `layer_types` names it."""

    FULL = "full_attention"
    SLIDING = "sliding_attention"


@dataclass(frozen=True)
class AttentionLayer:
    """What one decoder layer stores in the KV cache."""

    kind: LayerKind
    num_kv_heads: int
    head_dim: int
    # Reads an earlier layer's cache (Gemma's KV sharing) and allocates nothing of its own.
    kv_shared: bool = False

    def __post_init__(self) -> None:
        if self.num_kv_heads < 1 or self.head_dim < 1:
            raise ValueError(f"a layer needs num_kv_heads >= 1 and head_dim >= 1, got {self}")


@dataclass(frozen=True)
class Architecture:
    """The KV-relevant shape of a decoder: its layers, sliding window and position limit."""

    layers: tuple[AttentionLayer, ...]
    sliding_window: int | None = None
    max_position_embeddings: int | None = None

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("an architecture needs at least one attention layer")
        has_sliding = any(layer.kind is LayerKind.SLIDING for layer in self.layers)
        if has_sliding and (self.sliding_window is None or self.sliding_window < 1):
            raise ValueError("sliding-attention layers need a sliding_window >= 1")


@dataclass(frozen=True)
class ModelProfile:
    """One checkpoint as the planner sees it: its architecture and the bytes of its weights."""

    name: str
    architecture: Architecture
    weight_bytes: int
    # Where the weight figure comes from (index total_size, parameters x bytes, ...), for messages.
    weight_source: str = ""
    # Names of the numbers that are estimates rather than read from the checkpoint.
    estimates: tuple[str, ...] = ()


class KvLayout(enum.StrEnum):
    """How the serving backend lays the KV cache out in memory."""

    # vLLM's KV cache manager on CUDA and CPU: sliding-window layers keep only their window.
    VLLM_HYBRID = "vllm-hybrid"
    # tpu-inference: no sliding savings for mixed head sizes, padded heads, one page size for all layers.
    TPU = "tpu"


@dataclass(frozen=True)
class KvElement:
    """The storage of one cached K or V element, plus per-head scales some formats add."""

    bits: int
    # Bytes of scale per token per KV head, K and V together (per-token-head quantisation).
    scale_bytes_per_head: int = 0


# Source: vLLM 0.32 `--kv-cache-dtype` choices (serving/data/vllm-0.32-choices.json) and the element
# sizes in vllm/v1/kv_cache_interface.py; per-token-head formats add a float32 scale for K and for V per
# head (the "(256*1)*2 + 8 = 520 bytes" comment in vllm/model_executor/models/gemma4.py).
KV_ELEMENTS: dict[str, KvElement] = {
    "bfloat16": KvElement(bits=16),
    "float16": KvElement(bits=16),
    "fp8": KvElement(bits=8),
    "fp8_e4m3": KvElement(bits=8),
    "fp8_e5m2": KvElement(bits=8),
    "fp8_inc": KvElement(bits=8),
    "fp8_per_token_head": KvElement(bits=8, scale_bytes_per_head=8),
    "int8_per_token_head": KvElement(bits=8, scale_bytes_per_head=8),
}


class UnsupportedKvDtypeError(ValueError):
    """The planner has no size for this kv-cache dtype (it cannot say whether the stack fits)."""


def kv_element(kv_cache_dtype: str, *, model_dtype_bits: int = 16) -> KvElement:
    """The element size behind a `--kv-cache-dtype` value; `auto` means the model's own dtype."""
    if kv_cache_dtype == "auto":
        return KvElement(bits=model_dtype_bits)
    element = KV_ELEMENTS.get(kv_cache_dtype)
    if element is None:
        raise UnsupportedKvDtypeError(
            f"kv-cache dtype {kv_cache_dtype!r} is not modelled by the capacity planner; "
            f"modelled: auto, {', '.join(KV_ELEMENTS)}"
        )
    return element


def _align(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _round_to_blocks(tokens: int, block_size: int) -> int:
    return _align(tokens, block_size)


@dataclass(frozen=True)
class PlanInputs:
    """Everything a capacity plan depends on. Memory figures are bytes; totals span the TP group."""

    model: ModelProfile
    max_model_len: int
    max_num_seqs: int
    kv_cache_dtype: str = "auto"
    model_dtype_bits: int = 16
    drafter: ModelProfile | None = None
    # Memory of ONE accelerator (GPU, TPU chip); the group has tensor_parallel_size of them.
    device_memory_bytes: int | None = None
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1
    # Activation peak, CUDA graphs, runtime context: memory the engine keeps outside weights and KV.
    runtime_overhead_bytes: int = 0
    # An explicit KV budget (vLLM CPU's VLLM_CPU_KVCACHE_SPACE, or the figure a server logged);
    # when set, it replaces utilisation x memory - weights - overhead.
    kv_budget_bytes: int | None = None
    layout: KvLayout = KvLayout.VLLM_HYBRID
    # vLLM's KV block: 16 tokens on CUDA, 128 on CPU (vllm/platforms/cpu.py); rounding is per block.
    block_size: int = 16
    # Tokens scheduled but not yet settled, which sliding-window layers also hold (see module doc).
    in_flight_tokens: int = 0
    # Names the accelerator in messages, e.g. "NVIDIA L4".
    accelerator_label: str = "the accelerator"
    # The stated workload: tokens (prompt + output) of a typical request. max_num_seqs of them must fit
    # at once, or vLLM preempts under ordinary traffic; full-length sequences are only informative.
    workload_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_model_len < 1 or self.max_num_seqs < 1:
            raise ValueError("max_model_len and max_num_seqs must be >= 1")
        if self.workload_tokens is not None and self.workload_tokens < 1:
            raise ValueError("workload_tokens must be >= 1")
        if self.tensor_parallel_size < 1 or self.block_size < 1 or self.in_flight_tokens < 0:
            raise ValueError("tensor_parallel_size and block_size must be >= 1, in_flight_tokens >= 0")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.device_memory_bytes is None and self.kv_budget_bytes is None:
            raise ValueError("a plan needs device_memory_bytes or an explicit kv_budget_bytes")


def _layer_bytes_per_token(layer: AttentionLayer, element: KvElement, tp: int, layout: KvLayout) -> int:
    """KV bytes one token costs in one layer, summed over the tensor-parallel ranks."""
    if layout is KvLayout.TPU:
        # tpu-inference: heads padded up to the TP size, K and V packed into 32-bit slots, head dim
        # padded to 128 (get_padded_num_heads / get_padded_head_dim / rpa.get_kv_cache_shape).
        heads = layer.num_kv_heads if layer.num_kv_heads >= tp else tp
        per_rank_heads = heads // tp
        packing = max(1, 32 // element.bits)
        slots = _align(2 * per_rank_heads, packing)
        head_dim = layer.head_dim if layer.head_dim == 64 else _align(layer.head_dim, 128)
        return tp * slots * head_dim * element.bits // 8
    # vLLM: each rank holds num_kv_heads // tp heads, at least one (replicated when heads < tp).
    per_rank_heads = max(1, layer.num_kv_heads // tp)
    per_head = 2 * layer.head_dim * element.bits // 8 + element.scale_bytes_per_head
    return tp * per_rank_heads * per_head


def layer_kv_bytes_per_token(
    layer: AttentionLayer,
    kv_cache_dtype: str,
    *,
    tp: int = 1,
    layout: KvLayout = KvLayout.VLLM_HYBRID,
    model_dtype_bits: int = 16,
) -> int:
    """KV bytes one token costs in one layer, over the tensor-parallel group: what a decode step reads per
    cached token of that layer (serving/latency.py), counted as the capacity plan counts what it stores."""
    element = kv_element(kv_cache_dtype, model_dtype_bits=model_dtype_bits)
    return _layer_bytes_per_token(layer, element, tp, layout)


def prefix_hit_block(
    architecture: Architecture,
    kv_cache_dtype: str,
    *,
    tp: int = 1,
    layout: KvLayout = KvLayout.VLLM_HYBRID,
    block_size: int = 16,
    model_dtype_bits: int = 16,
) -> int:
    """The prefix cache's granularity in tokens: a hit covers whole blocks of every KV cache group, so it
    lands on multiples of the least common multiple of their block sizes (vllm/v1/core/kv_cache_coordinator.py:
    "the scheduling granularity (LCM of all group block sizes)"). vLLM gives the layers with smaller pages
    proportionally larger blocks (unify_kv_cache_spec_page_size), so a Gemma 4 12B on CUDA, whose sliding
    layers cost 4x the bytes a token of its global layers do, hits in multiples of 64 tokens, not 16; on the
    TPU layout every layer is counted at the largest page (one block size)."""
    element = kv_element(kv_cache_dtype, model_dtype_bits=model_dtype_bits)
    layers = [layer for layer in architecture.layers if not layer.kv_shared]
    costs = [_layer_bytes_per_token(layer, element, tp, layout) for layer in layers]
    if layout is KvLayout.TPU or not costs:
        return block_size
    largest = max(costs)
    blocks = [block_size * (largest // cost) if largest % cost == 0 else block_size for cost in costs]
    return math.lcm(*blocks)


@dataclass(frozen=True)
class _CacheLayer:
    kind: LayerKind
    bytes_per_token: int
    # Tokens per block of this layer: vLLM gives layers with smaller pages proportionally larger blocks
    # so that every layer's page has the same size (unify_kv_cache_spec_page_size).
    block_tokens: int


def _cache_layers(inputs: PlanInputs, element: KvElement) -> list[_CacheLayer]:
    """The layers that allocate KV cache (model and drafter), with their per-token cost and block."""
    tp = inputs.tensor_parallel_size
    layers = [layer for layer in inputs.model.architecture.layers if not layer.kv_shared]
    if inputs.drafter is not None:
        layers += [layer for layer in inputs.drafter.architecture.layers if not layer.kv_shared]
    costs = [_layer_bytes_per_token(layer, element, tp, inputs.layout) for layer in layers]
    largest = max(costs, default=0)
    block = inputs.block_size
    if inputs.layout is KvLayout.TPU:
        return [_CacheLayer(LayerKind.FULL, largest, block) for _ in layers]
    cache_layers = []
    for layer, cost in zip(layers, costs, strict=True):
        if largest % cost == 0:
            cache_layers.append(_CacheLayer(layer.kind, cost, block * (largest // cost)))
        else:  # vLLM pads a page that does not divide the largest one up to it
            cache_layers.append(_CacheLayer(layer.kind, largest, block))
    return cache_layers


def _sequence_bytes(layers: list[_CacheLayer], length: int, inputs: PlanInputs, window: int | None) -> int:
    """KV bytes one sequence of `length` tokens holds, rounded to whole blocks per layer."""
    total = 0
    for layer in layers:
        block = layer.block_tokens
        if layer.kind is LayerKind.SLIDING and window is not None:
            held = min(window - 1 + inputs.in_flight_tokens, length)
            tokens = _round_to_blocks(held, block) + block
        else:
            tokens = _round_to_blocks(length, block)
        total += tokens * layer.bytes_per_token
    return total


def _sliding_window(inputs: PlanInputs) -> int | None:
    windows = [inputs.model.architecture.sliding_window]
    if inputs.drafter is not None:
        windows.append(inputs.drafter.architecture.sliding_window)
    known = [window for window in windows if window is not None]
    return max(known) if known else None


class Severity(enum.StrEnum):
    """ERROR: the server cannot start or serve one full-length request. WARNING: the stated workload
    does not fit. INFO: figures worth knowing that are normal (long requests queue)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


# Where the figures and verdicts are explained; every verdict message points there.
DOCS = "docs/capacity-planning.md"


@dataclass(frozen=True)
class Finding:
    """One verdict of the planner, with the numbers behind it."""

    severity: Severity
    code: str
    message: str


@dataclass(frozen=True)
class CapacityPlan:
    """The planner's answer for one deployment; every figure in bytes or tokens."""

    inputs: PlanInputs
    weight_bytes: int
    usable_bytes: int | None
    kv_budget_bytes: int
    # Every KV-allocating layer storing the token (no sliding cap): the marginal cost of a short prompt.
    kv_bytes_per_token_uncapped: int
    kv_bytes_per_sequence: int
    max_concurrency: float
    capacity_tokens: int
    longest_fitting_len: int
    findings: tuple[Finding, ...]
    # KV bytes of one request of the stated workload (inputs.workload_tokens), and how many fit at once.
    workload_bytes_per_sequence: int | None = None
    workload_concurrency: float | None = None

    @property
    def kv_bytes_per_token(self) -> float:
        """Average KV cost of a token in one full-length sequence (sliding layers amortised)."""
        return self.kv_bytes_per_sequence / self.inputs.max_model_len

    @property
    def full_length_sequences(self) -> int:
        return math.floor(self.max_concurrency)

    @property
    def headroom_bytes(self) -> int:
        """KV budget left once max_num_seqs full-length sequences are resident (negative: shortfall)."""
        return self.kv_budget_bytes - self.inputs.max_num_seqs * self.kv_bytes_per_sequence

    @property
    def workload_headroom_bytes(self) -> int | None:
        """KV budget left once max_num_seqs requests of the stated workload are resident."""
        if self.workload_bytes_per_sequence is None:
            return None
        return self.kv_budget_bytes - self.inputs.max_num_seqs * self.workload_bytes_per_sequence

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    @property
    def infos(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.INFO)

    @property
    def fits(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary, for the `FORMAT=json` preview."""
        return {
            "model": self.inputs.model.name,
            "drafter": self.inputs.drafter.name if self.inputs.drafter else None,
            "layout": str(self.inputs.layout),
            "kvCacheDtype": self.inputs.kv_cache_dtype,
            "maxModelLen": self.inputs.max_model_len,
            "maxNumSeqs": self.inputs.max_num_seqs,
            "weightBytes": self.weight_bytes,
            "usableBytes": self.usable_bytes,
            "kvBudgetBytes": self.kv_budget_bytes,
            "kvBytesPerToken": round(self.kv_bytes_per_token, 1),
            "kvBytesPerTokenUncapped": self.kv_bytes_per_token_uncapped,
            "kvBytesPerSequence": self.kv_bytes_per_sequence,
            "capacityTokens": self.capacity_tokens,
            "maxConcurrency": round(self.max_concurrency, 2),
            "fullLengthSequences": self.full_length_sequences,
            "headroomBytes": self.headroom_bytes,
            "workloadTokens": self.inputs.workload_tokens,
            "workloadConcurrency": None if self.workload_concurrency is None else round(self.workload_concurrency, 2),
            "workloadHeadroomBytes": self.workload_headroom_bytes,
            "longestFittingLen": self.longest_fitting_len,
            "estimates": sorted(
                {f"{self.inputs.model.name}: {what}" for what in self.inputs.model.estimates}
                | (
                    {f"{self.inputs.drafter.name}: {what}" for what in self.inputs.drafter.estimates}
                    if self.inputs.drafter
                    else set()
                )
            ),
            "errors": [f.message for f in self.errors],
            "warnings": [f.message for f in self.warnings],
            "infos": [f.message for f in self.infos],
        }


def gib(value: float) -> str:
    """Bytes as GiB with two decimals, the unit vLLM logs memory in."""
    return f"{value / GIB:.2f} GiB"


def _longest_fitting_len(layers: list[_CacheLayer], inputs: PlanInputs, window: int | None, budget: int) -> int:
    """The longest sequence whose KV cache fits the budget (0 if not even one block does)."""
    if budget <= 0 or _sequence_bytes(layers, 1, inputs, window) > budget:
        return 0
    # Never suggest more than the model itself takes (its max_position_embeddings).
    limit = inputs.model.architecture.max_position_embeddings
    low, high = 1, min(inputs.max_model_len, limit) if limit else inputs.max_model_len
    if _sequence_bytes(layers, high, inputs, window) <= budget:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        if _sequence_bytes(layers, middle, inputs, window) <= budget:
            low = middle
        else:
            high = middle
    return low


def plan_capacity(inputs: PlanInputs) -> CapacityPlan:
    """Compute weights, KV cost, capacity and concurrency for one deployment, with its verdicts."""
    element = kv_element(inputs.kv_cache_dtype, model_dtype_bits=inputs.model_dtype_bits)
    layers = _cache_layers(inputs, element)
    window = _sliding_window(inputs)
    weight_bytes = inputs.model.weight_bytes + (inputs.drafter.weight_bytes if inputs.drafter else 0)

    usable: int | None = None
    if inputs.device_memory_bytes is not None:
        usable = int(inputs.gpu_memory_utilization * inputs.device_memory_bytes * inputs.tensor_parallel_size)
    if inputs.kv_budget_bytes is not None:
        budget = inputs.kv_budget_bytes
    else:
        assert usable is not None  # guaranteed by PlanInputs
        budget = usable - weight_bytes - inputs.runtime_overhead_bytes

    per_sequence = _sequence_bytes(layers, inputs.max_model_len, inputs, window)
    uncapped = sum(layer.bytes_per_token for layer in layers)
    concurrency = max(budget, 0) / per_sequence if per_sequence else math.inf
    capacity_tokens = math.floor(concurrency * inputs.max_model_len) if per_sequence else 0
    longest = _longest_fitting_len(layers, inputs, window, budget) if per_sequence else inputs.max_model_len
    workload_bytes = workload_fit = None
    if inputs.workload_tokens is not None:
        workload_bytes = _sequence_bytes(layers, min(inputs.workload_tokens, inputs.max_model_len), inputs, window)
        workload_fit = max(budget, 0) / workload_bytes if workload_bytes else math.inf

    draft = CapacityPlan(
        inputs=inputs,
        weight_bytes=weight_bytes,
        usable_bytes=usable,
        kv_budget_bytes=budget,
        kv_bytes_per_token_uncapped=uncapped,
        kv_bytes_per_sequence=per_sequence,
        max_concurrency=concurrency,
        capacity_tokens=capacity_tokens,
        longest_fitting_len=longest,
        findings=(),
        workload_bytes_per_sequence=workload_bytes,
        workload_concurrency=workload_fit,
    )
    return dataclasses.replace(draft, findings=assess(draft))


def assess(plan: CapacityPlan) -> tuple[Finding, ...]:
    """Errors (the server cannot start or serve one full-length request), warnings (the stated workload
    does not fit) and infos (how many full-length sequences fit: long requests queue, which is normal)."""
    inputs = plan.inputs
    findings: list[Finding] = []
    limit = inputs.model.architecture.max_position_embeddings
    if limit is not None and inputs.max_model_len > limit:
        findings.append(
            Finding(
                Severity.ERROR,
                "context-above-model-limit",
                f"--max-model-len {inputs.max_model_len:,} exceeds {inputs.model.name}'s "
                f"max_position_embeddings {limit:,}; vLLM refuses to start",
            )
        )
    if plan.usable_bytes is not None and inputs.kv_budget_bytes is None:
        needed = plan.weight_bytes + inputs.runtime_overhead_bytes
        if needed >= plan.usable_bytes:
            findings.append(
                Finding(
                    Severity.ERROR,
                    "weights-exceed-memory",
                    f"weights need {plan.weight_bytes / GB:.2f} GB ({gib(plan.weight_bytes)}) plus about "
                    f"{gib(inputs.runtime_overhead_bytes)} of runtime overhead, but only {gib(plan.usable_bytes)} "
                    f"is usable ({inputs.gpu_memory_utilization} x {inputs.tensor_parallel_size} x "
                    f"{gib(inputs.device_memory_bytes or 0)} on {inputs.accelerator_label}): the weights alone "
                    "do not fit; use a quantised checkpoint or a larger accelerator",
                )
            )
            return tuple(findings)
    if plan.max_concurrency < 1:
        findings.append(
            Finding(
                Severity.ERROR,
                "sequence-does-not-fit",
                f"one --max-model-len {inputs.max_model_len:,} sequence needs {gib(plan.kv_bytes_per_sequence)} "
                f"of KV cache ({inputs.kv_cache_dtype}), but only {gib(max(plan.kv_budget_bytes, 0))} is left "
                f"for it{_budget_origin(plan)}; vLLM refuses to start. The longest sequence that fits is "
                f"{plan.longest_fitting_len:,} tokens: lower --max-model-len to at most that, use a smaller "
                "kv-cache dtype or a larger accelerator",
            )
        )
        return tuple(findings)
    if plan.full_length_sequences < inputs.max_num_seqs:
        findings.append(
            Finding(
                Severity.INFO,
                "batch-does-not-fit",
                f"{plan.full_length_sequences} full-length ({inputs.max_model_len:,}-token) sequences fit in the "
                f"{gib(plan.kv_budget_bytes)} KV cache at once (--max-num-seqs {inputs.max_num_seqs} of them would "
                f"need {gib(inputs.max_num_seqs * plan.kv_bytes_per_sequence)}); more long requests queue, which is "
                f"normal when most requests are far shorter (see {DOCS})",
            )
        )
    findings += _workload_findings(plan)
    return tuple(findings)


def _workload_findings(plan: CapacityPlan) -> list[Finding]:
    """WARNING when max_num_seqs requests of the stated workload cannot all be resident at once."""
    inputs = plan.inputs
    tokens = inputs.workload_tokens
    if tokens is None or plan.workload_concurrency is None or plan.workload_bytes_per_sequence is None:
        return []
    if tokens > inputs.max_model_len:
        return [
            Finding(
                Severity.WARNING,
                "workload-above-context",
                f"the stated workload's requests of {tokens:,} tokens exceed --max-model-len "
                f"{inputs.max_model_len:,}: vLLM refuses them (see {DOCS})",
            )
        ]
    fit = math.floor(plan.workload_concurrency)
    need = inputs.max_num_seqs * plan.workload_bytes_per_sequence
    if fit >= inputs.max_num_seqs:
        return [
            Finding(
                Severity.INFO,
                "workload-fits",
                f"the stated workload fits: --max-num-seqs {inputs.max_num_seqs} requests of {tokens:,} tokens need "
                f"{gib(need)} of the {gib(plan.kv_budget_bytes)} KV cache ({fit} would fit)",
            )
        ]
    return [
        Finding(
            Severity.WARNING,
            "workload-does-not-fit",
            f"the stated workload does not fit: --max-num-seqs {inputs.max_num_seqs} requests of {tokens:,} tokens "
            f"need {gib(need)} of KV cache, but the {gib(plan.kv_budget_bytes)} budget holds {fit} of them; under "
            f"ordinary traffic vLLM preempts (recomputes) the rest. Lower --max-num-seqs to {max(fit, 1)}, free "
            f"memory, or state the real request size in capacity.requestTokens (see {DOCS})",
        )
    ]


def _budget_origin(plan: CapacityPlan) -> str:
    inputs = plan.inputs
    if inputs.kv_budget_bytes is not None or plan.usable_bytes is None:
        return " (the explicit KV budget)"
    return (
        f" after weights ({gib(plan.weight_bytes)}) and runtime overhead ({gib(inputs.runtime_overhead_bytes)}) "
        f"out of {gib(plan.usable_bytes)} usable on {inputs.accelerator_label}"
    )


def render_table(plan: CapacityPlan) -> str:
    """The planner's table for the text preview: one figure per line, then the verdicts."""
    inputs = plan.inputs
    names = inputs.model.name + (f" + {inputs.drafter.name}" if inputs.drafter else "")
    rows = [
        ("model", names),
        ("weights", f"{gib(plan.weight_bytes)} ({plan.weight_bytes / GB:.2f} GB)"),
        ("usable memory", gib(plan.usable_bytes) if plan.usable_bytes is not None else "n/a (explicit KV budget)"),
        ("KV budget", gib(plan.kv_budget_bytes)),
        (
            "KV per token",
            (
                f"{plan.kv_bytes_per_token:,.0f} B at {inputs.max_model_len:,} tokens "
                f"({plan.kv_bytes_per_token_uncapped:,} B uncapped, {inputs.kv_cache_dtype}, {inputs.layout})"
            ),
        ),
        ("capacity", f"{plan.capacity_tokens:,} tokens"),
        (
            "concurrency",
            f"{plan.max_concurrency:.2f}x at {inputs.max_model_len:,} tokens (max-num-seqs {inputs.max_num_seqs})",
        ),
        (
            "headroom",
            f"{gib(plan.headroom_bytes)} with {inputs.max_num_seqs} full-length sequences resident"
            if plan.workload_headroom_bytes is None
            else (
                f"{gib(plan.workload_headroom_bytes)} with {inputs.max_num_seqs} requests of "
                f"{inputs.workload_tokens:,} tokens resident (the stated workload)"
            ),
        ),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {value}" for label, value in rows]
    lines += [f"{finding.severity.upper()}: {finding.message}" for finding in plan.findings]
    return "\n".join(lines)
