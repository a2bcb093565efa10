"""The capacity planner's arithmetic, pinned on figures vLLM itself reported (docs/capacity-planning.md)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from serving.model_profiles import builtin_profile
from serving.planner import (
    Architecture,
    AttentionLayer,
    KvLayout,
    LayerKind,
    ModelProfile,
    PlanInputs,
    UnsupportedKvDtypeError,
    kv_element,
    plan_capacity,
    render_table,
)
from serving.units import GB, GIB

# vLLM's KV block on CPU (vllm/platforms/cpu.py sets 128 unless --block-size is given).
CPU_BLOCK = 128
L4_MEMORY = 24 * GB
TPU_V6E_CHIP = 32 * GB
# The runtime overhead the stacks assume on a GPU (activations, CUDA graphs, CUDA context).
GPU_OVERHEAD = 2 * GIB


def tiny() -> ModelProfile:
    return builtin_profile("vllm-cpu-tiny-model")


def tiny_gemma4() -> ModelProfile:
    return builtin_profile("calibration-tiny-gemma4")


def gemma12b() -> ModelProfile:
    return builtin_profile("gemma-4-12B-it")


def gemma12b_w4a16() -> ModelProfile:
    return builtin_profile("gemma-4-12B-it-qat-w4a16-ct")


@pytest.mark.parametrize(
    ("kv_space_gib", "logged_tokens", "logged_concurrency"),
    [(1, 2_097_152, 1024.00), (2, 4_194_304, 2048.00)],
)
def test_tiny_model_matches_vllm_cpu_log(kv_space_gib: int, logged_tokens: int, logged_concurrency: float) -> None:
    """The planner must reproduce vLLM's own start-up figure for the tiny model at two KV sizes.

    Guards against the planner drifting from vLLM ("CPU KV cache size: N tokens, Maximum concurrency
    for 2,048 tokens per request: Yx", logged with VLLM_CPU_KVCACHE_SPACE=1 and 2).
    """
    plan = plan_capacity(
        PlanInputs(
            model=tiny(),
            max_model_len=2048,
            max_num_seqs=128,
            kv_budget_bytes=kv_space_gib * GIB,
            block_size=CPU_BLOCK,
            in_flight_tokens=2048,
        )
    )
    assert plan.kv_bytes_per_token_uncapped == 2 * 2 * 2 * 32 * 2  # layers x K,V x heads x dim x bf16
    assert plan.capacity_tokens == logged_tokens
    assert round(plan.max_concurrency, 2) == logged_concurrency
    assert plan.fits


@pytest.mark.parametrize(
    ("max_model_len", "kv_space_gib", "batched_tokens", "logged_tokens", "logged_concurrency"),
    [
        (2048, 1, 2048, 208_412, 101.76),  # vLLM CPU defaults
        (2048, 1, 256, 762_600, 372.36),  # --max-num-batched-tokens 256
        (4096, 2, 2048, 754_032, 184.09),  # MAX_MODEL_LEN=4096, VLLM_CPU_KVCACHE_SPACE=2
    ],
)
def test_tiny_gemma4_layout_matches_vllm_cpu_log(
    max_model_len: int, kv_space_gib: int, batched_tokens: int, logged_tokens: int, logged_concurrency: float
) -> None:
    """Gemma 4's layout (sliding windows, mixed head dims, KV-shared layers) at toy size matches vLLM.

    Guards against the sliding-window arithmetic that matters most for our stacks: vLLM holds
    window - 1 + in-flight tokens per sliding layer, rounds to blocks, and gives smaller-page layers
    larger blocks. Without the in-flight term the 256-token case would read 630x instead of 372x.
    """
    plan = plan_capacity(
        PlanInputs(
            model=tiny_gemma4(),
            max_model_len=max_model_len,
            max_num_seqs=128,
            kv_budget_bytes=kv_space_gib * GIB,
            block_size=CPU_BLOCK,
            in_flight_tokens=batched_tokens,  # the CPU backend turns async scheduling off: one batch
        )
    )
    assert plan.capacity_tokens == logged_tokens
    assert round(plan.max_concurrency, 2) == logged_concurrency


def test_tpu_v6e4_matches_the_users_recorded_figures() -> None:
    """Gemma 4 12B on TPU v6e-4 (bf16 weights, fp8 KV, 88.98 GiB for KV): 242,944 tokens, 3.71x at 65,536.

    Guards the TPU layout: tpu-inference stores every token in every layer (no sliding savings for
    mixed head dims) at one page size; the planner must land within block rounding of the log.
    """
    plan = plan_capacity(
        PlanInputs(
            model=gemma12b(),
            max_model_len=65_536,
            max_num_seqs=64,
            kv_cache_dtype="fp8",
            tensor_parallel_size=4,
            kv_budget_bytes=round(88.98 * GIB),
            layout=KvLayout.TPU,
            block_size=256,
        )
    )
    assert plan.kv_bytes_per_token_uncapped == 48 * 4 * 2 * 2 * 512  # 48 layers x 4 chips x 2 slots x 2 x 512
    assert abs(plan.capacity_tokens - 242_944) / 242_944 < 0.001
    assert round(plan.max_concurrency, 2) == 3.71
    assert plan.infos  # 64 sequences of 65,536 tokens cannot all be resident (normal: an INFO)


def test_tpu_figures_are_far_below_what_the_gpu_layout_would_promise() -> None:
    """Planning a TPU with the GPU (hybrid) layout would promise about ten times the real concurrency.

    Guards against choosing the layout by default: the same budget on the hybrid layout reads ~36x.
    """
    common = PlanInputs(
        model=gemma12b(),
        max_model_len=65_536,
        max_num_seqs=8,
        kv_cache_dtype="fp8",
        tensor_parallel_size=4,
        kv_budget_bytes=round(88.98 * GIB),
    )
    tpu = plan_capacity(dataclasses.replace(common, layout=KvLayout.TPU, block_size=256))
    gpu = plan_capacity(dataclasses.replace(common, in_flight_tokens=2048))
    assert gpu.max_concurrency > 9 * tpu.max_concurrency


def test_bf16_12b_on_l4_fails_on_weights() -> None:
    """The bf16 12B checkpoint on a 24 GB L4: its weights alone fill the card, so the plan fails.

    Guards against the first hand-made deployment's failure (engine dying at the first requests).
    """
    plan = plan_capacity(
        PlanInputs(
            model=gemma12b(),
            max_model_len=8192,
            max_num_seqs=16,
            kv_cache_dtype="fp8",
            device_memory_bytes=L4_MEMORY,
            gpu_memory_utilization=0.95,
            runtime_overhead_bytes=GPU_OVERHEAD,
            accelerator_label="NVIDIA L4",
        )
    )
    assert not plan.fits
    (error,) = plan.errors
    assert error.code == "weights-exceed-memory"
    assert "23.90 GB" in error.message
    assert "21.23 GiB is usable" in error.message
    assert "NVIDIA L4" in error.message


def test_16k_at_64_sequences_on_l4_warns_with_the_numbers() -> None:
    """16K contexts at 64 sequences on an L4 with the 4-bit checkpoint: fits one, not 64 at once.

    Guards against the 16K-on-L4 out-of-memory story: the preview must say how many fit.
    """
    plan = plan_capacity(
        PlanInputs(
            model=gemma12b_w4a16(),
            max_model_len=16_384,
            max_num_seqs=64,
            kv_cache_dtype="fp8",
            device_memory_bytes=L4_MEMORY,
            gpu_memory_utilization=0.95,
            runtime_overhead_bytes=GPU_OVERHEAD,
            in_flight_tokens=2 * 8192,  # async scheduling, --max-num-batched-tokens 8192
            accelerator_label="NVIDIA L4",
        )
    )
    assert plan.fits
    assert plan.warnings == ()  # no workload stated: nothing is wrong, only informative
    (info,) = plan.infos
    assert info.code == "batch-does-not-fit"
    assert "--max-num-seqs 64" in info.message
    assert f"{plan.full_length_sequences} full-length" in info.message
    assert 1 <= plan.full_length_sequences < 64
    assert plan.headroom_bytes < 0


def test_context_above_what_a_tpu_v6e1_holds_fails_with_the_longest_that_fits() -> None:
    """A TPU v6e-1 (one 32 GB chip) serving bf16 12B cannot hold a 16K context; the error says what fits.

    Guards against the node started with a small limit and then benchmarked above it.
    """
    plan = plan_capacity(
        PlanInputs(
            model=gemma12b(),
            max_model_len=16_384,
            max_num_seqs=8,
            kv_cache_dtype="bfloat16",
            device_memory_bytes=TPU_V6E_CHIP,
            gpu_memory_utilization=0.9,
            runtime_overhead_bytes=1 * GIB,
            layout=KvLayout.TPU,
            block_size=256,
            accelerator_label="TPU v6e",
        )
    )
    (error,) = plan.errors
    assert error.code == "sequence-does-not-fit"
    assert 0 < plan.longest_fitting_len < 16_384
    assert f"{plan.longest_fitting_len:,} tokens" in error.message
    shorter = plan_capacity(dataclasses.replace(plan.inputs, max_model_len=plan.longest_fitting_len))
    assert shorter.fits
    assert shorter.max_concurrency >= 1


def test_context_above_the_models_position_limit_fails() -> None:
    """A max_model_len beyond max_position_embeddings is refused by vLLM; the planner says so first."""
    plan = plan_capacity(
        PlanInputs(model=tiny(), max_model_len=4096, max_num_seqs=1, kv_budget_bytes=GIB, block_size=CPU_BLOCK)
    )
    assert [error.code for error in plan.errors] == ["context-above-model-limit"]
    assert "max_position_embeddings 2,048" in plan.errors[0].message


def test_sliding_layers_cost_per_sequence_not_per_token() -> None:
    """Full-attention layers grow with length, sliding layers stop at window + in-flight tokens.

    Guards the reported KV-per-token figure: it must fall as contexts grow for Gemma 4.
    """

    def per_token(length: int) -> float:
        plan = plan_capacity(
            PlanInputs(model=gemma12b(), max_model_len=length, max_num_seqs=1, kv_budget_bytes=100 * GIB)
        )
        return plan.kv_bytes_per_token

    sliding_bf16 = 40 * 2 * 8 * 256 * 2
    full_bf16 = 8 * 2 * 1 * 512 * 2
    assert per_token(1024) == pytest.approx(sliding_bf16 + full_bf16, rel=0.02)
    assert per_token(32_768) == pytest.approx(full_bf16 + sliding_bf16 * (1024 + 16) / 32_768, rel=0.01)
    assert per_token(131_072) < per_token(32_768) < per_token(4096)


def test_kv_shared_layers_and_the_mtp_drafter_add_no_kv() -> None:
    """KV-shared layers (and every layer of the MTP drafter) read another layer's cache: no KV of their own.

    Guards against double-counting the drafter: it costs weights only.
    """
    drafter = builtin_profile("gemma-4-12B-it-assistant")
    base = PlanInputs(model=gemma12b_w4a16(), max_model_len=32_768, max_num_seqs=8, kv_budget_bytes=20 * GIB)
    alone = plan_capacity(base)
    with_drafter = plan_capacity(dataclasses.replace(base, drafter=drafter))
    assert with_drafter.kv_bytes_per_sequence == alone.kv_bytes_per_sequence
    assert with_drafter.weight_bytes == alone.weight_bytes + drafter.weight_bytes

    shared = tiny_gemma4()
    unshared_layers = tuple(
        AttentionLayer(layer.kind, layer.num_kv_heads, layer.head_dim) for layer in shared.architecture.layers
    )
    unshared = dataclasses.replace(
        shared, architecture=dataclasses.replace(shared.architecture, layers=unshared_layers)
    )

    def uncapped(model: ModelProfile) -> int:
        inputs = PlanInputs(model=model, max_model_len=64, max_num_seqs=1, kv_budget_bytes=GIB)
        return plan_capacity(inputs).kv_bytes_per_token_uncapped

    # The two shared layers: one sliding (4 KV heads x 32) and one full (1 KV head x 64), bf16.
    assert uncapped(unshared) - uncapped(shared) == 2 * 4 * 32 * 2 + 2 * 1 * 64 * 2


def test_kv_dtypes() -> None:
    """fp8 halves the cache; per-token-head formats add their scales; unknown formats are named, not guessed."""
    assert kv_element("auto").bits == 16
    assert kv_element("fp8").bits == 8
    head = kv_element("fp8_per_token_head")
    # vLLM's Gemma 4 comment: a 256-dim head costs (256*1)*2 + 8 = 520 bytes per token.
    assert 2 * 256 * head.bits // 8 + head.scale_bytes_per_head == 520
    with pytest.raises(UnsupportedKvDtypeError, match=r"nvfp4.*modelled: auto, bfloat16"):
        kv_element("nvfp4")


def test_tensor_parallel_replicates_kv_heads_below_the_tp_size() -> None:
    """With fewer KV heads than ranks, vLLM replicates them: 1 head on 4 ranks costs 4 heads."""
    layer = AttentionLayer(LayerKind.FULL, num_kv_heads=1, head_dim=512)
    model = ModelProfile("one-layer", Architecture(layers=(layer,)), weight_bytes=0)
    one = plan_capacity(PlanInputs(model=model, max_model_len=16, max_num_seqs=1, kv_budget_bytes=GIB))
    four = plan_capacity(
        PlanInputs(model=model, max_model_len=16, max_num_seqs=1, kv_budget_bytes=GIB, tensor_parallel_size=4)
    )
    assert four.kv_bytes_per_token_uncapped == 4 * one.kv_bytes_per_token_uncapped


def test_table_and_json_carry_the_figures() -> None:
    """The preview's table and JSON show weights, KV per token, capacity, concurrency and headroom."""
    plan = plan_capacity(
        PlanInputs(model=tiny(), max_model_len=2048, max_num_seqs=128, kv_budget_bytes=GIB, block_size=CPU_BLOCK)
    )
    table = render_table(plan)
    for label in ("weights", "KV per token", "capacity", "concurrency", "headroom"):
        assert label in table
    assert "2,097,152 tokens" in table
    document = json.loads(json.dumps(plan.as_dict()))
    assert document["capacityTokens"] == 2_097_152
    assert document["maxConcurrency"] == 1024.0
    assert document["headroomBytes"] == GIB - 128 * 2048 * 512
    assert math.isclose(document["kvBytesPerToken"], 512)


def test_inputs_need_memory_or_a_budget() -> None:
    """A plan without device memory or an explicit KV budget is a programming error, said plainly."""
    with pytest.raises(ValueError, match="device_memory_bytes or an explicit kv_budget_bytes"):
        PlanInputs(model=tiny(), max_model_len=2048, max_num_seqs=1)
