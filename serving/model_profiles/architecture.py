"""Read a checkpoint's `config.json` into the planner's view of it: layers, heads, windows, sharing.

Why one reader: the built-in profiles store the `config.json` fields of the checkpoints our stacks use,
and a stack may point at any other checkpoint's `config.json`; both go through the same code, so a
profile can always be checked against the real file.

Gemma 4 specifics handled (transformers 5.19 `Gemma4TextConfig`, vLLM 0.32 `gemma4.py`): full-attention
layers use `global_head_dim` (512 when absent) and, with `attention_k_eq_v`, `num_global_key_value_heads`
KV heads; `per_layer_config` (written by newer transformers) overrides both per layer; the last
`num_kv_shared_layers` layers reuse an earlier layer's cache and store nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serving.planner import Architecture, AttentionLayer, LayerKind

# transformers' Gemma 4 default when `global_head_dim` is absent (configuration_gemma4.py).
GEMMA4_DEFAULT_GLOBAL_HEAD_DIM = 512
# transformers' Gemma 2/3/4 default pattern when `layer_types` is absent: five sliding, one full.
GEMMA_DEFAULT_SLIDING_PATTERN = 6


class ConfigError(ValueError):
    """A config.json lacks a field the planner needs, or holds one it cannot use."""


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The decoder's fields: multimodal checkpoints nest them under `text_config`."""
    nested = config.get("text_config")
    return nested if isinstance(nested, Mapping) else config


def _int(config: Mapping[str, Any], key: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"config.json field {key!r} must be a non-negative integer, got {described(value)}")
    return value


def described(value: object) -> str:
    """What a value of a config.json is, without its contents: a file named by mistake (a credentials file, another
    project's) must not have its values copied into an error message or a CI log."""
    if value is None:
        return "nothing (the field is missing or null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a negative number" if value < 0 else "a decimal number"
    kinds: tuple[tuple[type, str], ...] = ((str, "a string"), (list, "a list"), (dict, "an object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "a value of another type")


def _optional_int(config: Mapping[str, Any], key: str) -> int | None:
    return None if config.get(key) is None else _int(config, key)


def _is_gemma4(config: Mapping[str, Any]) -> bool:
    return str(config.get("model_type", "")).startswith("gemma4")


def layer_kinds(config: Mapping[str, Any]) -> list[LayerKind]:
    """Each layer's attention type, from `layer_types` or the family's default pattern."""
    count = _int(config, "num_hidden_layers")
    names = config.get("layer_types")
    if isinstance(names, list):
        if len(names) != count:
            raise ConfigError(f"config.json layer_types has {len(names)} entries for {count} layers")
        allowed = {kind.value for kind in LayerKind}
        for position, name in enumerate(names):
            if name not in allowed:
                raise ConfigError(
                    f"config.json layer_types[{position}] is not one of {', '.join(sorted(allowed))} "
                    f"({described(name)})"
                )
        return [LayerKind(name) for name in names]
    pattern = config.get("sliding_window_pattern")
    if pattern is None and str(config.get("model_type", "")).startswith(("gemma3", "gemma4")):
        pattern = GEMMA_DEFAULT_SLIDING_PATTERN
    if isinstance(pattern, int) and pattern > 0 and config.get("sliding_window"):
        kinds = [LayerKind.FULL if (i + 1) % pattern == 0 else LayerKind.SLIDING for i in range(count)]
        if _is_gemma4(config):
            kinds[-1] = LayerKind.FULL  # transformers forces Gemma 4's last layer to full attention
        return kinds
    if config.get("sliding_window") and config.get("use_sliding_window", True):
        return [LayerKind.SLIDING] * count  # Mistral-style: every layer slides
    return [LayerKind.FULL] * count


def _per_layer_overrides(config: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    raw = config.get("per_layer_config")
    if not isinstance(raw, Mapping):
        return {}
    overrides: dict[int, Mapping[str, Any]] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping):
            overrides[int(key)] = value
    return overrides


def architecture_from_config(config: Mapping[str, Any]) -> Architecture:
    """The planner's architecture for a checkpoint, from its `config.json` (nested or flat)."""
    text = text_config(config)
    kinds = layer_kinds(text)
    heads = _int(text, "num_attention_heads")
    head_dim = _optional_int(text, "head_dim") or _int(text, "hidden_size") // max(heads, 1)
    kv_heads = _optional_int(text, "num_key_value_heads") or heads
    global_head_dim = head_dim
    global_kv_heads = kv_heads
    if _is_gemma4(text) or "global_head_dim" in text:
        global_head_dim = _optional_int(text, "global_head_dim") or GEMMA4_DEFAULT_GLOBAL_HEAD_DIM
        global_kv = _optional_int(text, "num_global_key_value_heads")
        if global_kv is not None and text.get("attention_k_eq_v", True):
            global_kv_heads = global_kv
    overrides = _per_layer_overrides(text)
    shared = _optional_int(text, "num_kv_shared_layers") or 0
    if shared > len(kinds):
        raise ConfigError(f"config.json num_kv_shared_layers {shared} exceeds num_hidden_layers {len(kinds)}")
    first_shared = len(kinds) - shared
    layers = []
    for index, kind in enumerate(kinds):
        layer_heads, layer_dim = (global_kv_heads, global_head_dim) if kind is LayerKind.FULL else (kv_heads, head_dim)
        override = overrides.get(index, {})
        layer_heads = override.get("num_key_value_heads") or layer_heads
        layer_dim = override.get("head_dim") or layer_dim
        layers.append(AttentionLayer(kind, int(layer_heads), int(layer_dim), kv_shared=index >= first_shared))
    window = _optional_int(text, "sliding_window") if LayerKind.SLIDING in kinds else None
    return Architecture(
        layers=tuple(layers),
        sliding_window=window,
        max_position_embeddings=_optional_int(text, "max_position_embeddings"),
    )
