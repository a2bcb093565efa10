"""The model catalog: five Gemma 4 models whose data is complete, sourced and consistent with its own arithmetic."""

from __future__ import annotations

import pytest

from serving.catalog import SupportStatus, catalog, catalog_model, find_checkpoint
from serving.model_profiles import builtin_profile
from serving.model_profiles.architecture import architecture_from_config
from serving.model_profiles.parameters import dense_parameter_counts
from serving.planner import LayerKind
from serving.shapes import Accelerator

MODELS = ("gemma-4-e2b-it", "gemma-4-e4b-it", "gemma-4-12b-it", "gemma-4-26b-a4b-it", "gemma-4-31b-it")


def test_the_catalog_has_the_five_gemma_4_models() -> None:
    """Only the 12B used to be turnkey; every size of the family must be there."""
    assert set(catalog()) == set(MODELS)


@pytest.mark.parametrize("model_id", MODELS)
def test_every_fact_says_where_it_comes_from(model_id: str) -> None:
    """A number without a source (or a read date) could not be checked by the next reader."""
    model = catalog_model(model_id)
    for cited in (model.parameters, model.config_source, model.tpu, model.context_length):
        assert cited.source.strip()
        assert cited.read.year == 2026
    for variant in model.variants.values():
        assert variant.source.strip()
        assert variant.weights.source.strip()
        # What the catalog does not record for an accelerator comes from the shapes table's weight formats.
        assert set(variant.runs_on) <= set(Accelerator.every())
        for accelerator in Accelerator.every():
            support = variant.support(accelerator)
            assert support.status is SupportStatus.YES or support.why.strip()
        assert variant.drafter in model.drafters
    for drafter in model.drafters.values():
        assert drafter.source.strip()
        assert drafter.weights.source.strip()


@pytest.mark.parametrize("model_id", MODELS)
def test_estimated_weights_are_declared_as_estimates(model_id: str) -> None:
    """No index total_size was readable offline: every weight figure must say it is an estimate."""
    model = catalog_model(model_id)
    for name, variant in model.variants.items():
        assert variant.weights.total_size is None
        assert any(note.startswith("weights:") for note in variant.estimates), name


def test_configs_read_from_copies_are_not_presented_as_confirmed() -> None:
    """The checkpoints' own config.json files were not readable here: the catalog must not claim otherwise."""
    assert not any(model.config_source.confirmed for model in catalog().values())


@pytest.mark.parametrize(
    ("model_id", "layers", "sliding", "full", "shared", "window"),
    [
        ("gemma-4-e2b-it", 35, 28, 7, 20, 512),
        ("gemma-4-e4b-it", 42, 35, 7, 18, 512),
        ("gemma-4-12b-it", 48, 40, 8, 0, 1024),
        ("gemma-4-26b-a4b-it", 30, 25, 5, 0, 1024),
        ("gemma-4-31b-it", 60, 50, 10, 0, 1024),
    ],
)
def test_layer_patterns_and_kv_sharing(  # noqa: PLR0917 - one parameter per column of the table above
    model_id: str, layers: int, sliding: int, full: int, shared: int, window: int
) -> None:
    """Sliding vs full layers and KV-shared layers decide the KV cache; the patterns the copies agree on."""
    architecture = architecture_from_config(catalog_model(model_id).config)
    kinds = [layer.kind for layer in architecture.layers]
    assert len(kinds) == layers
    assert kinds.count(LayerKind.SLIDING) == sliding
    assert kinds.count(LayerKind.FULL) == full
    assert sum(layer.kv_shared for layer in architecture.layers) == shared
    assert architecture.sliding_window == window


def test_heterogeneous_head_dims() -> None:
    """Full layers: 512-wide heads (4 KV heads on the 31B, 2 on the 26B); sliding layers: 256."""
    for model_id, sliding_heads, full_heads in (("gemma-4-31b-it", 16, 4), ("gemma-4-26b-a4b-it", 8, 2)):
        layers = architecture_from_config(catalog_model(model_id).config).layers
        assert {(x.num_kv_heads, x.head_dim) for x in layers if x.kind is LayerKind.SLIDING} == {(sliding_heads, 256)}
        assert {(x.num_kv_heads, x.head_dim) for x in layers if x.kind is LayerKind.FULL} == {(full_heads, 512)}


def test_moe_parameter_arithmetic_matches_the_model_card() -> None:
    """All 128 experts stay resident: the 26B-A4B's weights are its 25.2B, not its 3.8B active."""
    model = catalog_model("gemma-4-26b-a4b-it")
    text = model.text_config
    dense = dense_parameter_counts(model.config).total
    experts = text["num_hidden_layers"] * text["num_experts"] * 3 * text["hidden_size"] * text["moe_intermediate_size"]
    router = text["num_hidden_layers"] * text["hidden_size"] * text["num_experts"]
    total = dense + experts + router
    active = dense + experts * text["top_k_experts"] // text["num_experts"] + router
    assert total == pytest.approx(model.parameters.total, rel=0.01)
    assert active == pytest.approx(model.parameters.active, rel=0.01)
    bf16 = model.variants["bf16"].weights
    assert sum(part.parameters for part in bf16.parts) == total + model.towers.parameters  # type: ignore[union-attr]


def test_31b_decoder_arithmetic_matches_the_model_card() -> None:
    """The dense 31B's config.json counts the card's 30.7B parameters (vision encoder besides)."""
    model = catalog_model("gemma-4-31b-it")
    assert dense_parameter_counts(model.config).total == pytest.approx(30.7e9, rel=0.005)


def test_quantised_variants_are_smaller_in_the_expected_order() -> None:
    """bf16 > fp8 > int4/nvfp4 for each model that has them; the q4_0 QAT export is half-precision like bf16."""
    for model in catalog().values():
        size = {name: builtin_profile(variant.leaf).weight_bytes for name, variant in model.variants.items()}
        if "qat-q4_0-unquantized" in size:
            assert size["qat-q4_0-unquantized"] == size["bf16"]
        if "fp8" in size:
            assert size["bf16"] > size["fp8"]
        for small in ("qat-w4a16-ct", "nvfp4"):
            if small in size and "fp8" in size:
                assert size["fp8"] > size[small]


def test_recipe_facts_kept_as_data() -> None:
    """Upstream's recommended speculative tokens and variant arguments, as vllm-project/recipes states them."""
    assert catalog_model("gemma-4-e2b-it").drafters["google/gemma-4-E2B-it-assistant"].num_speculative_tokens == 2
    assert catalog_model("gemma-4-31b-it").drafters["google/gemma-4-31B-it-assistant"].recommended == "4-8"
    fp8 = catalog_model("gemma-4-26b-a4b-it").variants["fp8"]
    assert fp8.vllm_args == ("--kv-cache-dtype", "fp8")
    assert fp8.env_by_accelerator[Accelerator("nvidia-rtx-pro-6000")] == {"VLLM_USE_V2_MODEL_RUNNER": "1"}
    assert "qat-w4a16-ct" not in catalog_model("gemma-4-26b-a4b-it").variants  # no W4A16 of the MoE upstream


def test_precision_support() -> None:
    """NVFP4 runs weight-only on the L4 (Marlin, capability >= 7.5), natively on Blackwell; vllm-tpu loads
    neither W4A16 nor NVFP4. The L4 used to be refused NVFP4 although write-up E served the 31B on two L4s."""
    nvfp4 = catalog_model("gemma-4-31b-it").variants["nvfp4"]
    assert nvfp4.support(Accelerator("nvidia-l4")).status is SupportStatus.YES
    assert "weight-only" in nvfp4.support(Accelerator("nvidia-l4")).why
    assert any(conflict.startswith("footprint:") and "22 GB" in conflict for conflict in nvfp4.conflicts)
    assert nvfp4.support(Accelerator("nvidia-rtx-pro-6000")).status is SupportStatus.YES
    assert nvfp4.support(Accelerator("tpu-v6e")).status is SupportStatus.NO
    for model in catalog().values():
        if "qat-w4a16-ct" in model.variants:
            assert model.variants["qat-w4a16-ct"].support(Accelerator("tpu-v6e")).status is SupportStatus.NO


def test_find_checkpoint_by_repo_or_bucket_path() -> None:
    """A stack that names a checkpoint the long way (repo or bucket directory) is recognised, drafters too."""
    hit = find_checkpoint("google/gemma-4-31B-it")
    assert hit is not None
    assert (hit[0].id, hit[1]) == ("gemma-4-31b-it", "bf16")
    hit = find_checkpoint("gemma-4-12b-it-assistant/")
    assert hit is not None
    assert hit[2] is not None
    assert hit[0].id == "gemma-4-12b-it"
    assert find_checkpoint("my-own-finetune") is None


def test_v6e4_from_first_principles_is_within_five_percent_of_the_log() -> None:
    """Calibration 3 without the log's KV budget: the planner used to say 221,265 tokens (9 % low) because it
    took the datasheet's 32 GB per chip; with the 124.98 GiB the log reports for 4 chips it is within 5 %."""
    from serving.planner import KvLayout, PlanInputs, plan_capacity
    from serving.shapes import resolved
    from serving.units import GIB

    chip = resolved("v6e-4")
    assert chip.memory_gib * chip.chips == pytest.approx(124.98)
    plan = plan_capacity(
        PlanInputs(
            model=builtin_profile("gemma-4-12B-it"),
            max_model_len=65_536,
            max_num_seqs=64,
            kv_cache_dtype="fp8",
            device_memory_bytes=round(chip.memory_gib * GIB),
            gpu_memory_utilization=0.9,
            tensor_parallel_size=4,
            runtime_overhead_bytes=4 * GIB,
            layout=KvLayout.TPU,
            block_size=256,
        )
    )
    assert plan.capacity_tokens == pytest.approx(242_944, rel=0.05)
    assert plan.capacity_tokens == 235_447  # -3.1 %: the residual docs/capacity-planning.md states
