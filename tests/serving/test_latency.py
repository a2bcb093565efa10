"""The latency model's arithmetic (serving/latency.py, docs/advisor.md): what a decode step reads, what a prefill
computes, and how a replica behaves under load."""

from __future__ import annotations

import dataclasses
import math

import pytest

from serving.catalog import catalog_model
from serving.latency import (
    PEAK,
    Efficiency,
    Hardware,
    Replica,
    Requests,
    Speculation,
    acceptance_from_counters,
    at_rate,
    decode_ceiling_tokens_per_s,
    decode_step,
    model_cost,
    prefill_ceiling_tokens_per_s,
    saturation_rate,
    with_users,
)
from serving.shapes import Accelerator
from serving.speculation import speculation_for
from serving.speed_facts import fitted_efficiency, hardware_for

L4 = hardware_for(Accelerator("nvidia-l4"))
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
    assert alone.request_rate == pytest.approx(1 / (alone.ttft_mean_s + 255 * alone.tpot_s), rel=1e-3)


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


def _rtx_12b(variant: str = "bf16", *, draft_tokens: int = 0, cap: int = 256) -> Replica:
    model = catalog_model("gemma-4-12b-it")
    cost = model_cost(model, variant, kv_cache_dtype="fp8")
    hardware = hardware_for(Accelerator("nvidia-rtx-pro-6000"), host_vcpus=20)
    speculation = speculation_for(model, variant, draft_tokens) if draft_tokens else None
    return Replica(cost, hardware, fitted_efficiency().efficiency(hardware), batch_cap=cap, speculation=speculation)


def test_a_resent_prompt_is_served_from_the_cache_in_whole_hit_blocks() -> None:
    """A chatbot whose 8K system prompt every request shares prefills only the rest: without reuse the advisor
    prices every prompt cold and calls for several times the GPUs a user needs. vLLM hits whole blocks (64 tokens
    for the 12B: its global layers' pages are 4x smaller, so their blocks 4x longer) and recomputes the last one's
    token for its logits; with MTP it drops one more block (the drafter's lookahead may have written it)."""
    replica = _twelve_b_qat()
    assert replica.model.hit_block == 64
    assert replica.cached_tokens(Requests(8192, 256), batch=8) == 0, "unknown traffic: no reuse"
    shared = Requests(8192, 256, reused_tokens=8192)
    assert replica.cached_tokens(shared, batch=8) == 8192 - 64
    assert replica.cached_tokens(Requests(8192, 256, reused_tokens=2000), batch=8) == 1984
    assert replica.cached_tokens(Requests(100, 16, reused_tokens=100), batch=1) == 64
    drafted = dataclasses.replace(replica, speculation=speculation_for(catalog_model("gemma-4-12b-it"), "bf16", 3))
    assert drafted.cached_tokens(shared, batch=8) == 8192 - 128
    cold = at_rate(replica, Requests(8192, 256), 0.05)
    warm = at_rate(replica, shared, 0.05)
    assert warm.cached_tokens == 8192 - 64
    assert warm.ttft_mean_s < cold.ttft_mean_s / 5
    assert saturation_rate(replica, shared) > 5 * saturation_rate(replica, Requests(8192, 256))


def test_a_working_set_larger_than_the_free_cache_gets_fewer_hits() -> None:
    """Fifty users each with their own 6K-token history cannot all stay cached on an L4 whose KV holds a few
    such conversations: the hit share falls with what the running sequences leave free, never above 1."""
    replica = dataclasses.replace(_twelve_b_qat(), batch_cap=8, kv_sequences=10.0)
    one = Requests(6144, 256, reused_tokens=6000, distinct_prefixes=1)
    many = Requests(6144, 256, reused_tokens=6000, distinct_prefixes=50)
    assert replica.cached_tokens(one, batch=8) == pytest.approx(5952)
    # 10 sequences of 6,400 tokens hold 64,000; the 8 running keep 272 tokens each of their own: 61,824 for a
    # working set of 50 x 6,000 = 300,000 tokens, so about a fifth of the reused tokens hit.
    assert replica.cached_tokens(many, batch=8) == pytest.approx(5952 * (64000 - 8 * 272) / 300000)
    assert replica.cached_tokens(many, batch=1) > replica.cached_tokens(many, batch=8), "a busier cache hits less"


def test_tokens_per_step_follow_the_acceptance_and_the_counters_give_it_back() -> None:
    """MTP emits 1 + a + ... + a^k tokens a step (Leviathan et al. 2023); the counters of write-up B (139 drafts
    of 3 tokens, 23 accepted) give the per-position acceptance that reproduces 23 / 139 accepted a draft."""
    drafter = model_cost(catalog_model("gemma-4-12b-it"), "bf16")
    assert Speculation(3, 0.0, drafter).tokens_per_step() == 1.0
    assert Speculation(2, 0.5, drafter).tokens_per_step() == pytest.approx(1.75)
    alpha = acceptance_from_counters(139, 23, 3)
    assert Speculation(3, alpha, drafter).tokens_per_step() == pytest.approx(1 + 23 / 139, rel=1e-6)
    with pytest.raises(ValueError, match="acceptance"):
        Speculation(3, 1.0, drafter)


def test_mtp_helps_one_long_stream_and_loses_a_large_short_batch() -> None:
    """Write-up A's conclusion: MTP-3 on the RTX PRO 6000 helps at one user and 16K tokens (decode reads the
    weights and a long KV for one token: drafts ride on the same read) and loses at 128 users and 1K (the step is
    compute-bound: verifying 4 tokens a sequence costs 4x the FLOPs for fewer than 4 tokens). At the acceptance
    of a matched-precision target; at write-up B's 5.5% MTP loses everywhere."""
    plain, mtp = _rtx_12b(), _rtx_12b(draft_tokens=3)
    long_one = Requests(16384, 256)
    assert with_users(mtp, long_one, 1).tpot_s < 0.8 * with_users(plain, long_one, 1).tpot_s
    short_many = Requests(1024, 256)
    assert with_users(mtp, short_many, 128).request_rate < with_users(plain, short_many, 128).request_rate
    hardware, efficiency = plain.hardware, plain.efficiency
    low = Speculation(3, acceptance_from_counters(139, 23, 3), mtp.speculation.drafter)  # type: ignore[union-attr]
    step, tokens = decode_step(plain.model, hardware, efficiency, 1, 16384, low)
    assert step / tokens > decode_step(plain.model, hardware, efficiency, 1, 16384)[0]


def test_tensor_parallel_pays_two_allreduces_a_layer_over_its_interconnect() -> None:
    """Sharding a 12B that fits one chip adds 2 x layers all-reduces a step: over the L4s' PCIe they cost what
    NVLink does not, so TP 2 is slower than the bandwidth alone says and replicas can win."""
    cost = model_cost(catalog_model("gemma-4-12b-it"), "qat-w4a16-ct", kv_cache_dtype="fp8", tensor_parallel=2)
    l4, h100 = hardware_for(Accelerator("nvidia-l4"), 2), hardware_for("nvidia-h100-80gb", 2)
    assert l4.interconnect is not None
    assert h100.interconnect is not None
    assert "PCIe" in l4.interconnect.kind
    assert "NVLink" in h100.interconnect.kind
    no_links = dataclasses.replace(l4, interconnect=dataclasses.replace(l4.interconnect, latency_s=0.0, bandwidth=1e18))
    step = decode_step(cost, l4, EFFICIENCY, 1, 1024)[0]
    ideal = decode_step(cost, no_links, EFFICIENCY, 1, 1024)[0]
    assert step - ideal == pytest.approx(2 * cost.layers * l4.interconnect.latency_s, rel=0.05)
    prefill_links = 2 * cost.layers * l4.allreduce_seconds(cost.allreduce_bytes(8192))
    assert prefill_links > 2 * cost.layers * h100.allreduce_seconds(cost.allreduce_bytes(8192)) * 5
    with pytest.raises(ValueError, match="interconnect"):
        Hardware("two", 2, 1e14, 1e11)


def test_the_12b_serves_more_per_chip_on_v6e_1_replicas_than_at_tp_4() -> None:
    """The brief's fact and write-up C's finding: four v6e-1 replicas of the 12B serve more than one v6e-4 at TP 4
    (its all-reduces and fixed costs buy less than 4x), so advise must not prefer the sharded slice."""
    model = catalog_model("gemma-4-12b-it")
    from serving.planner import KvLayout

    requests = Requests(1024, 128)
    rates = {}
    for chips in (1, 4):
        cost = model_cost(model, "bf16", kv_cache_dtype="fp8_e5m2", tensor_parallel=chips, layout=KvLayout.TPU)
        hardware = hardware_for("tpu-v6e", chips, host_vcpus=44 if chips == 1 else 180)
        replica = Replica(cost, hardware, fitted_efficiency().efficiency(hardware), batch_cap=64, batched_tokens=1024)
        rates[chips] = with_users(replica, requests, 64).request_rate
    assert 4 * rates[1] > rates[4]


def test_no_prediction_exceeds_the_physical_ceiling() -> None:
    """A prediction above what every peak reached allows would be a number no server can meet: decode never above
    the bandwidth ceiling (x the tokens a speculative step can emit), uncached prompt tokens never above the
    compute ceiling, whatever the load or reuse."""
    for replica in (_twelve_b_qat(), _rtx_12b(), _rtx_12b(draft_tokens=3)):
        for requests in (Requests(128, 64), Requests(8192, 512, reused_tokens=8000), Requests(16384, 16)):
            for users in (1, 8, 64, 512):
                state = with_users(replica, requests, users)
                batch = max(state.decode_batch, 1.0)
                context = requests.prompt_tokens + requests.output_tokens / 2
                tokens = 1 + (replica.speculation.draft_tokens if replica.speculation else 0)
                ceiling = tokens * decode_ceiling_tokens_per_s(replica.model, replica.hardware, batch, context)
                assert batch / state.tpot_s <= ceiling * 1.0001
                fresh = requests.prompt_tokens - state.cached_tokens
                assert (
                    state.request_rate * fresh
                    <= prefill_ceiling_tokens_per_s(
                        replica.model, replica.hardware, requests.prompt_tokens, state.cached_tokens
                    )
                    * (fresh / requests.prompt_tokens)
                    * 1.0001
                )


def test_the_host_tokenises_every_prompt_cached_or_not() -> None:
    """A prompt the cache serves still costs the host its tokenisation: 16K-token prompts on a 4-vCPU Cloud Run
    L4 top out at vCPUs / (tokens x time a token), as write-up B's 16K cells did, not at the GPU's rate."""
    replica = dataclasses.replace(_twelve_b_qat(), hardware=hardware_for(Accelerator("nvidia-l4"), host_vcpus=4))
    requests = Requests(16384, 3, reused_tokens=16384)
    host = replica.host_seconds(requests)
    assert host == pytest.approx(16384 * replica.efficiency.host_s_per_token)
    if host:
        assert saturation_rate(replica, requests) <= 4 / host * 1.0001
