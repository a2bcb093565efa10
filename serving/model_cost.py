"""The arithmetic of one model variant: what a token multiplies, what a decode step reads, what a prompt computes.

Why its own module: the latency model (serving/latency.py) combines this with the hardware and the load; the
same numbers feed the bench's physical ceilings (verify/bench/ceilings.py) and the matrix. Every figure is
read from the catalog (serving/catalog: parameters, the bytes of each weight part, the attention layers and
their windows, a MoE's expert count and top-k, the MTP drafters) and the capacity planner's per-layer KV sizes
(serving/planner.py), so a new catalog entry needs no code here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from serving.catalog import CatalogModel, Drafter, catalog
from serving.model_profiles.architecture import architecture_from_config
from serving.planner import Architecture, KvLayout, LayerKind, layer_kv_bytes_per_token, prefix_hit_block

# Bytes of one activation element the tensor-parallel all-reduces move (vLLM runs Gemma's activations in bf16).
ACTIVATION_BYTES = 2


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
    ``layers`` and ``hidden_size`` size the tensor-parallel all-reduces; ``hit_block`` is the prefix cache's
    granularity in tokens (a hit covers whole blocks of it, serving/planner.prefix_hit_block).
    """

    name: str
    active_params: float
    dense_read_bytes: float
    expert_bytes: float = 0.0
    experts: int = 0
    top_k: int = 0
    attention: tuple[AttentionCost, ...] = ()
    layers: int = 0
    hidden_size: int = 0
    hit_block: int = 16
    # Per-length results of the two sums over layers, which the load model asks for thousands of times.
    _memo: dict[tuple[str, float], float] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def touched_experts(self, tokens: float) -> float:
        """Expected share of a layer's experts a step of ``tokens`` tokens reads: 1 - (1 - k/E)^tokens, the
        expected number of distinct experts among ``tokens`` independent top-k choices over E (uniform routing),
        over E."""
        if not self.experts:
            return 1.0
        return 1.0 - float((1.0 - self.top_k / self.experts) ** max(tokens, 1.0))

    def step_weight_bytes(self, tokens: float) -> float:
        """Weight bytes one forward pass over ``tokens`` tokens reads: the dense part and the touched experts."""
        return self.dense_read_bytes + self.touched_experts(tokens) * self.expert_bytes

    def kv_read_bytes(self, context: float) -> float:
        """KV bytes a decode step reads for one sequence of ``context`` tokens (sliding layers: their window)."""
        key = ("kv", context)
        if key not in self._memo:
            self._memo[key] = sum(
                layer.kv_bytes_per_token * min(context, layer.window or context) for layer in self.attention
            )
        return self._memo[key]

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

    def prefill_flops_after(self, tokens: float, cached: float) -> float:
        """FLOPs of a prompt of ``tokens`` whose first ``cached`` tokens the prefix cache serves: the rest's
        matmuls and their attention over the whole prompt (exact for causal attention: the difference of the
        two prefixes' sums)."""
        if cached <= 0:
            return self.prefill_flops(tokens)
        return self.prefill_flops(tokens) - self.prefill_flops(min(cached, tokens))

    def allreduce_bytes(self, tokens: float) -> float:
        """Bytes one tensor-parallel all-reduce moves for ``tokens`` tokens: their hidden states in bf16."""
        return tokens * self.hidden_size * ACTIVATION_BYTES


def _is_tower(what: str) -> bool:
    return any(word in what for word in ("vision", "audio", "encoder"))


def default_block_size(layout: KvLayout) -> int:
    """vLLM's KV block per backend: 16 tokens on CUDA (CacheConfig's default), 256 on TPU (serving/planner)."""
    return 256 if layout is KvLayout.TPU else 16


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


def _attention(
    text: dict[str, object], architecture: Architecture, kv_cache_dtype: str, tensor_parallel: int, layout: KvLayout
) -> tuple[AttentionCost, ...]:
    heads = int(str(text.get("num_attention_heads", 1)))
    head_dim = int(str(text.get("head_dim", 0) or 0))
    global_dim = int(str(text.get("global_head_dim", head_dim) or head_dim))
    return tuple(
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
    return ModelCost(
        name=f"{model.id} {variant}",
        active_params=float(model.parameters.active),
        dense_read_bytes=float(dense),
        expert_bytes=float(experts),
        experts=int(text.get("num_experts") or 0),
        top_k=int(text.get("top_k_experts") or 0),
        attention=_attention(text, architecture, kv_cache_dtype, tensor_parallel, layout),
        layers=len(architecture.layers),
        hidden_size=int(text.get("hidden_size") or 0),
        hit_block=prefix_hit_block(
            architecture, kv_cache_dtype, tp=tensor_parallel, layout=layout, block_size=default_block_size(layout)
        ),
    )


@functools.lru_cache(maxsize=256)
def drafter_cost(
    model_id: str, drafter_repo: str, *, kv_cache_dtype: str = "fp8", tensor_parallel: int = 1
) -> ModelCost:
    """An MTP drafter's arithmetic (one forward pass over the batch): its own weights, all read every pass,
    and the target's KV it attends to (Gemma 4's assistants share the target's cache: they store none but
    read it, vllm gemma4_mtp.py). Its parameters are what a drafted token multiplies."""
    model = catalog()[model_id]
    drafter: Drafter = model.drafters[drafter_repo]
    config = drafter.config
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    assert isinstance(text, dict)
    architecture = architecture_from_config(config)
    parameters = sum(part.parameters or 0 for part in drafter.weights.parts) or drafter.weights.bytes / 2
    return ModelCost(
        name=f"{drafter.leaf} (drafter)",
        active_params=float(parameters),
        dense_read_bytes=float(drafter.weights.bytes),
        attention=_attention(text, architecture, kv_cache_dtype, tensor_parallel, KvLayout.VLLM_HYBRID),
        layers=len(architecture.layers),
        hidden_size=int(text.get("hidden_size") or model.text_config.get("hidden_size") or 0),
        hit_block=16,
    )


def chunks(tokens: float, chunk: int) -> int:
    """Engine steps a prompt of ``tokens`` takes at ``chunk`` prompt tokens a step (chunked prefill)."""
    return math.ceil(max(tokens, 1) / chunk)
