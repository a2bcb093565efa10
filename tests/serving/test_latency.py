"""The latency model's arithmetic (serving/latency.py, docs/advisor.md): what a decode step reads, what a prefill
computes, and how a replica behaves under load."""

from __future__ import annotations

import math

import pytest

from serving.accelerators import Accelerator
from serving.catalog import catalog_model
from serving.latency import (
    PEAK,
    Efficiency,
    Hardware,
    Replica,
    Requests,
    at_rate,
    decode_ceiling_tokens_per_s,
    model_cost,
    saturation_rate,
    with_users,
)
from serving.speed_facts import fitted_efficiency, hardware_for

L4 = hardware_for(Accelerator.NVIDIA_L4)
EFFICIENCY = Efficiency(compute=0.4, bandwidth=0.6, client_s=0.1)


def _twelve_b_qat() -> Replica:
    cost = model_cost(catalog_model("gemma-4-12b-it"), "qat-w4a16-ct", kv_cache_dtype="fp8")
    return Replica(cost, L4, EFFICIENCY, batch_cap=32)


def test_a_12b_on_an_l4_decodes_one_stream_below_the_bandwidth_ceiling() -> None:
    """A 12B on an L4 recorded at 218 tok/s for one user must be impossible: one stream reads every weight the
    decoder multiplies (the tied embeddings included) per token, so 300 GB/s allows a few dozen tokens/s."""
    cost = model_cost(catalog_model("gemma-4-12b-it"), "qat-w4a16-ct", kv_cache_dtype="fp8")
    ceiling = decode_ceiling_tokens_per_s(cost, L4)
    assert 20 < ceiling < 40
    assert ceiling == pytest.approx(300e9 / cost.dense_read_bytes, rel=1e-3)
    embeddings = 262144 * 3840 * 2
    assert cost.dense_read_bytes > embeddings, "the tied LM head reads the embedding table every step"


def test_a_moe_step_reads_only_the_experts_its_tokens_touch() -> None:
    """The 26B-A4B holds 128 experts but one token uses 8: a one-stream step reads 1/16 of them, a large batch
    nearly all of them. Counting every expert would make the MoE look as slow as a 26B dense model."""
    cost = model_cost(catalog_model("gemma-4-26b-a4b-it"), "bf16", kv_cache_dtype="fp8")
    assert cost.touched_experts(1) == pytest.approx(8 / 128)
    assert cost.touched_experts(256) > 0.99
    one = cost.step_weight_bytes(1)
    assert one == pytest.approx(cost.dense_read_bytes + cost.expert_bytes / 16)
    assert one < 0.3 * (cost.dense_read_bytes + cost.expert_bytes)


def test_towers_are_not_read_by_a_decode_step() -> None:
    """The vision encoder is loaded but a text token never multiplies it: counting it would understate speed."""
    model = catalog_model("gemma-4-31b-it")
    cost = model_cost(model, "bf16", kv_cache_dtype="fp8")
    total = model.variant("bf16").weights.bytes
    assert model.towers is not None
    assert cost.dense_read_bytes == pytest.approx(total - model.towers.weight_bytes, rel=0.01)


def test_sliding_layers_read_only_their_window_of_kv() -> None:
    """Past the 1,024-token window only the global layers' KV grows: a 16K context reads far less than 16x a
    1K one. On the TPU layout (no sliding savings in tpu-inference) every layer grows."""
    model = catalog_model("gemma-4-12b-it")
    cost = model_cost(model, "bf16", kv_cache_dtype="fp8")
    growth = cost.kv_read_bytes(16384) - cost.kv_read_bytes(8192)
    full = [layer for layer in cost.attention if layer.window is None]
    assert full
    assert len(full) < len(cost.attention)
    assert growth == pytest.approx(8192 * sum(layer.kv_bytes_per_token for layer in full))
    from serving.planner import KvLayout

    tpu = model_cost(model, "bf16", kv_cache_dtype="fp8_e5m2", layout=KvLayout.TPU)
    assert all(layer.window is None for layer in tpu.attention)


def test_prefill_flops_add_attention_within_each_window() -> None:
    """Attention costs grow with the square of the prompt on global layers only; sliding layers stop at their
    window. Ignoring it would flatter long prompts; counting it everywhere would bury them."""
    cost = model_cost(catalog_model("gemma-4-12b-it"), "bf16")
    short, long = cost.attention_flops(1024), cost.attention_flops(16384)
    assert 16 < long / short < 256
    assert cost.prefill_flops(8192) > 2 * cost.active_params * 8192


def test_one_user_sees_the_single_stream_figures() -> None:
    """At one user nothing queues: TPOT is one step, TTFT the prefill plus the time outside the engine."""
    replica = _twelve_b_qat()
    alone = with_users(replica, Requests(128, 256), 1)
    assert 1 / alone.tpot_s == pytest.approx(
        decode_ceiling_tokens_per_s(replica.model, L4, 1, 128 + 128) * 0.6, rel=0.05
    )
    assert alone.ttft_p95_s >= alone.ttft_mean_s > EFFICIENCY.client_s
    assert alone.request_rate == pytest.approx(1 / (alone.ttft_mean_s + 256 * alone.tpot_s), rel=1e-3)


def test_more_users_raise_throughput_and_latency_until_the_replica_saturates() -> None:
    """Batching: more users share each weight read (throughput up, TPOT up a little); past the slots they queue."""
    replica = _twelve_b_qat()
    requests = Requests(1024, 256)
    states = [with_users(replica, requests, users) for users in (1, 8, 32, 128)]
    rates = [state.request_rate for state in states]
    assert rates == sorted(rates)
    assert states[1].tpot_s > states[0].tpot_s
    assert states[-1].ttft_mean_s > 10 * states[1].ttft_mean_s, "96 users wait for the 32 slots"
    edge = saturation_rate(replica, requests)
    assert states[-1].request_rate <= edge * 1.001
    over = at_rate(replica, requests, edge * 1.5)
    assert over.saturated
    assert math.isinf(over.ttft_p95_s)
    assert over.why


def test_the_peak_efficiency_is_the_physical_ceiling() -> None:
    """The bench's ceiling check uses every peak reached: no fitted efficiency may exceed it."""
    fitted = fitted_efficiency()
    hardware = Hardware("x", 1, 1e14, 1e11)
    for efficiency in (fitted.efficiency(hardware), PEAK):
        assert efficiency.compute <= 1
        assert efficiency.bandwidth <= 1
    with pytest.raises(ValueError, match="efficiencies"):
        Efficiency(compute=1.5, bandwidth=0.5)
