"""The linear modules a LoRA adapter may carry weights for, per decoder layer, with their shapes.

Why: vLLM 0.32 loads an adapter whose tensors do not fit the model (a `lora_B` of 96 rows for a 128-wide
projection is accepted and served), so what fits is checked before an adapter is imported
(job_scripts/import_weights.py) and again by `gemma-verify adapters check`: each `lora_A` must be
`[rank, in_features]` and each `lora_B` `[out_features, rank]` of the module it names, in the layer it names.

The shapes follow from the model's text config as Hugging Face's Gemma 4 modules build them
(transformers `Gemma4TextAttention` / `Gemma4TextMLP`, read 2026-12 in public copies that agree:
transformers' modeling_gemma4.py and independent ports in mlx-swift-lm and candle):
- full-attention layers use `global_head_dim`; with `attention_k_eq_v` they use
  `num_global_key_value_heads` and have no `v_proj` (V reuses `k_proj`'s output);
- sliding layers use `head_dim` and `num_key_value_heads`, with their own `v_proj`;
- the last `num_kv_shared_layers` layers keep their k/v projections (unused with a KV cache) and, with
  `use_double_wide_mlp` (E2B), an MLP twice `intermediate_size` wide.
A config without `layer_types` (a Llama-style model, the live tests' tiny one) has full attention throughout.
Gemma 4's MoE experts (26B-A4B) are not listed: LoRA on them is not confirmed for vLLM, so an adapter that
targets them is refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FULL_ATTENTION = "full_attention"
KV_SHARED = "+kv-shared"


@dataclass(frozen=True)
class LayerShapes:
    """Per decoder layer, the kind of layer it is; per kind, each adaptable module's (in, out) features."""

    layer_kinds: tuple[str, ...]
    kind_shapes: Mapping[str, Mapping[str, tuple[int, int]]]

    def modules_of(self, layer: int) -> Mapping[str, tuple[int, int]]:
        return self.kind_shapes[self.layer_kinds[layer]]

    def to_json(self) -> dict[str, Any]:
        """What the import job reads (IMPORT_ADAPTER): plain lists, no tuples."""
        return {
            "layerKinds": list(self.layer_kinds),
            "kindShapes": {
                kind: {module: list(shape) for module, shape in sorted(modules.items())}
                for kind, modules in sorted(self.kind_shapes.items())
            },
        }


def _int(config: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key)
    if value is None:
        if default is None:
            raise KeyError(f"the model's config has no {key}")
        return default
    return int(value)


def layer_shapes(text_config: Mapping[str, Any]) -> LayerShapes:
    """The adaptable modules of each decoder layer of a model with this text config (see the module doc)."""
    hidden = _int(text_config, "hidden_size")
    intermediate = _int(text_config, "intermediate_size")
    heads = _int(text_config, "num_attention_heads")
    kv_heads = _int(text_config, "num_key_value_heads", heads)
    head_dim = _int(text_config, "head_dim", hidden // heads)
    layers = _int(text_config, "num_hidden_layers")
    types = list(text_config.get("layer_types") or [FULL_ATTENTION] * layers)
    if len(types) != layers:
        raise ValueError(f"layer_types lists {len(types)} layers, num_hidden_layers says {layers}")
    first_shared = layers - _int(text_config, "num_kv_shared_layers", 0)
    k_eq_v = bool(text_config.get("attention_k_eq_v"))
    double_wide = bool(text_config.get("use_double_wide_mlp"))
    kinds: list[str] = []
    shapes: dict[str, dict[str, tuple[int, int]]] = {}
    for index, layer_type in enumerate(types):
        full = layer_type == FULL_ATTENTION
        shared = 0 < first_shared <= index
        kind = f"{layer_type}{KV_SHARED if shared else ''}"
        kinds.append(kind)
        if kind in shapes:
            continue
        dim = _int(text_config, "global_head_dim", head_dim) if full else head_dim
        alternative = k_eq_v and full
        kv = _int(text_config, "num_global_key_value_heads", kv_heads) if alternative else kv_heads
        wide = intermediate * (2 if double_wide and shared else 1)
        modules = {
            "q_proj": (hidden, heads * dim),
            "k_proj": (hidden, kv * dim),
            "o_proj": (heads * dim, hidden),
            "gate_proj": (hidden, wide),
            "up_proj": (hidden, wide),
            "down_proj": (wide, hidden),
        }
        if not alternative:
            modules["v_proj"] = (hidden, kv * dim)
        shapes[kind] = modules
    return LayerShapes(tuple(kinds), shapes)
