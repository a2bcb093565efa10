"""Parameter counts of a dense decoder by part, from its `config.json`, to size quantised checkpoints.

Why: a "4-bit" checkpoint is not parameters x 0.5 bytes. Quantisation recipes leave some parts in bf16
(often the embeddings and, for Gemma 4, the attention projections), so a weight estimate must weigh each
part at its own width. These counts are the arithmetic behind the profiles' weight estimates; the tests
check them against checkpoints whose real parameter count we know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving.model_profiles.architecture import architecture_from_config, text_config
from serving.planner import LayerKind


@dataclass(frozen=True)
class ParameterCounts:
    """Parameters of the decoder by part (norms included in `norms`)."""

    embeddings: int
    attention: int
    mlp: int
    norms: int

    @property
    def total(self) -> int:
        return self.embeddings + self.attention + self.mlp + self.norms


def _field(config: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = config.get(key)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else default


def dense_parameter_counts(config: Mapping[str, Any]) -> ParameterCounts:
    """Count the decoder's parameters: q/k/v/o projections, gated MLP, embeddings, norms.

    Gemma-family models (model_type gemma*) have four norms per layer plus q/k norms; others two.
    KV-shared layers have no k/v projections; Gemma 4's k_eq_v full-attention layers have no v.
    """
    text = text_config(config)
    architecture = architecture_from_config(config)
    hidden = _field(text, "hidden_size")
    heads = _field(text, "num_attention_heads")
    intermediate = _field(text, "intermediate_size")
    vocab = _field(text, "vocab_size")
    gemma = str(text.get("model_type", "")).startswith("gemma")
    k_eq_v = bool(text.get("attention_k_eq_v", False))
    attention = 0
    norms = hidden  # the final norm
    for layer in architecture.layers:
        query = hidden * heads * layer.head_dim
        attention += 2 * query  # q_proj and o_proj
        norms += (4 if gemma else 2) * hidden + (layer.head_dim if gemma else 0)
        if not layer.kv_shared:
            kv = hidden * layer.num_kv_heads * layer.head_dim
            has_v = not (k_eq_v and layer.kind is LayerKind.FULL)
            attention += kv * (2 if has_v else 1)
            norms += layer.head_dim if gemma else 0  # k_norm
    mlp = 3 * hidden * intermediate * len(architecture.layers)
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", True)))
    embeddings = vocab * hidden * (1 if tied else 2)
    return ParameterCounts(embeddings=embeddings, attention=attention, mlp=mlp, norms=norms)
