"""Model profiles: the built-in data stays consistent with the checkpoints' config.json and arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serving.model_profiles import (
    ConfigError,
    builtin_profile,
    builtin_profile_files,
    builtin_profile_names,
    find_builtin_profile,
    profile_from_config_file,
)
from serving.model_profiles.architecture import architecture_from_config
from serving.model_profiles.parameters import dense_parameter_counts
from serving.planner import LayerKind
from serving.units import GB

SAFETENSORS_HEADER_LIMIT = 64 * 1024


def test_every_builtin_profile_loads_and_says_where_its_numbers_come_from() -> None:
    """A profile without sources (or with an unparseable config) would make the preview's figures unverifiable."""
    assert {"gemma-4-12B-it", "gemma-4-12B-it-qat-w4a16-ct", "gemma-4-12B-it-assistant"} <= set(builtin_profile_names())
    for name, file in builtin_profile_files().items():
        profile = builtin_profile(name)
        assert profile.weight_bytes > 0
        assert file.config_source.strip()
        assert file.weights.source.strip()


def test_gemma4_12b_architecture_from_its_config() -> None:
    """Gemma 4 12B: 40 sliding layers (8 KV heads x 256), 8 full layers (1 KV head x 512), window 1024."""
    architecture = builtin_profile("gemma-4-12B-it").architecture
    sliding = [layer for layer in architecture.layers if layer.kind is LayerKind.SLIDING]
    full = [layer for layer in architecture.layers if layer.kind is LayerKind.FULL]
    assert len(sliding) == 40
    assert len(full) == 8
    assert {(layer.num_kv_heads, layer.head_dim) for layer in sliding} == {(8, 256)}
    assert {(layer.num_kv_heads, layer.head_dim) for layer in full} == {(1, 512)}
    assert architecture.sliding_window == 1024
    assert architecture.max_position_embeddings == 262_144
    assert not any(layer.kv_shared for layer in architecture.layers)


def test_estimated_numbers_are_declared() -> None:
    """Numbers not read from the checkpoint must be flagged as estimates (they show in the preview's JSON)."""
    for name in ("gemma-4-12B-it", "gemma-4-12B-it-qat-w4a16-ct", "gemma-4-12B-it-assistant"):
        assert builtin_profile(name).estimates, name
    assert not builtin_profile("vllm-cpu-tiny-model").estimates


def test_parameter_counts_match_known_checkpoints() -> None:
    """The part-by-part counts behind the 4-bit estimate are exact on checkpoints we built and measured."""
    for name, parameters in (("vllm-cpu-tiny-model", 819_840), ("calibration-tiny-gemma4", 2_472_864)):
        file = builtin_profile_files()[name]
        assert dense_parameter_counts(file.config).total == parameters
        header = file.weights.bytes - 2 * parameters  # bf16 tensors + the safetensors JSON header
        assert 0 < header < SAFETENSORS_HEADER_LIMIT


def test_w4a16_weight_parts_follow_the_config() -> None:
    """The 4-bit checkpoint's parts are the 12B's real part sizes: the data cannot drift from the arithmetic."""
    file = builtin_profile_files()["gemma-4-12B-it-qat-w4a16-ct"]
    counts = dense_parameter_counts(file.config)
    by_part = {part.what.split(" ")[0]: part.parameters for part in file.weights.parts}
    assert by_part["MLP"] == counts.mlp
    assert by_part["attention"] == counts.attention
    assert by_part["token"] == counts.embeddings
    assert sum(part.parameters for part in file.weights.parts) == 11_950_000_000


def test_a_four_bit_checkpoint_is_not_half_a_byte_per_parameter() -> None:
    """The '15.5 GB that was really 22 GB' lesson: 4-bit weights with bf16 attention weigh far more than 6 GB."""
    bf16 = builtin_profile("gemma-4-12B-it").weight_bytes
    w4a16 = builtin_profile("gemma-4-12B-it-qat-w4a16-ct").weight_bytes
    assert bf16 == pytest.approx(23.9 * GB, rel=0.001)
    assert 0.5 * 11.95 * GB < 1.5 * 0.5 * 11.95 * GB < w4a16 < bf16


def test_find_builtin_profile_by_model_path() -> None:
    """A stack names its checkpoint by bucket path; the last part selects the profile."""
    found = find_builtin_profile("models/gemma-4-12B-it-qat-w4a16-ct/")
    assert found is not None
    assert found.name == "gemma-4-12B-it-qat-w4a16-ct"
    assert find_builtin_profile("some/other-model") is None


def test_profile_from_a_config_json_with_an_index(tmp_path: Path) -> None:
    """A stack can point at another checkpoint's config.json; weights come from its index total_size."""
    config = builtin_profile_files()["calibration-tiny-gemma4"].config
    (tmp_path / "config.json").write_text(json.dumps(config))
    index = {"metadata": {"total_size": 123_456}, "weight_map": {}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    profile = profile_from_config_file(tmp_path / "config.json")
    assert profile.weight_bytes == 123_456
    assert profile.architecture == builtin_profile("calibration-tiny-gemma4").architecture


def test_profile_from_a_config_json_sums_shards_or_says_what_is_missing(tmp_path: Path) -> None:
    """Without an index the safetensors files are summed; with neither, the error says what to give."""
    config = builtin_profile_files()["vllm-cpu-tiny-model"].config
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="give the weight bytes explicitly"):
        profile_from_config_file(tmp_path / "config.json")
    (tmp_path / "model-00001-of-00002.safetensors").write_bytes(b"x" * 100)
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"x" * 50)
    assert profile_from_config_file(tmp_path / "config.json").weight_bytes == 150
    assert profile_from_config_file(tmp_path / "config.json", weight_bytes=7).weight_bytes == 7


def test_gemma4_defaults_and_per_layer_overrides() -> None:
    """Without layer_types Gemma 4 uses five sliding layers per full one, the last full; per_layer_config wins."""
    config = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 7,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "num_global_key_value_heads": 1,
        "attention_k_eq_v": True,
        "sliding_window": 64,
        "per_layer_config": {"05": {"head_dim": 128, "num_key_value_heads": 2}},
    }
    layers = architecture_from_config(config).layers
    assert [layer.kind for layer in layers] == [LayerKind.SLIDING] * 5 + [LayerKind.FULL] * 2
    assert (layers[5].num_kv_heads, layers[5].head_dim) == (2, 128)
    assert (layers[6].num_kv_heads, layers[6].head_dim) == (1, 512)  # transformers' default global_head_dim


def test_other_families_and_bad_configs() -> None:
    """Mistral-style windows slide on every layer, Llama on none; a wrong layer_types names the field."""
    base = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    assert {layer.kind for layer in architecture_from_config({**base, "sliding_window": 16}).layers} == {
        LayerKind.SLIDING
    }
    assert {layer.head_dim for layer in architecture_from_config(base).layers} == {16}
    with pytest.raises(ConfigError, match="layer_types has 1 entries for 2 layers"):
        architecture_from_config({**base, "layer_types": ["full_attention"]})
    with pytest.raises(ConfigError, match="'num_hidden_layers' must be a non-negative integer"):
        architecture_from_config({"num_attention_heads": 4})
