"""Judgement: SLO gates, cost, the physical ceiling and the accelerator facts they rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.pricing import deployed_cloud_run_billing, hourly_price, minimum_billing
from serving.shapes import resolved_shapes
from verify.bench.judgement import (
    accelerator_facts,
    ceiling_request_throughput,
    cost,
    params_from_model_name,
    parse_params,
    platform_verdict,
)
from verify.bench.results import load_results
from verify.bench.slo import allowed_keys, parse_slo, violations

DATA = Path(__file__).parent / "data"


def test_slo_keys_are_result_keys_and_directions_are_right() -> None:
    """Guards against an SLO that checks a different number than the one printed, or the wrong way."""
    assert parse_slo("ttft_p99_ms=2000").key == "p99_ttft_ms"
    assert parse_slo("p99_e2el_ms=8000").holds(7999.0)
    assert not parse_slo("p99_e2el_ms=8000").holds(8001.0)
    assert parse_slo("success_rate=0.99").holds(1.0)
    assert not parse_slo("success_rate=0.99").holds(0.98)
    assert not parse_slo("request_throughput=5").holds(4.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("p99_ttft", "key=value"),
        ("ttft=2", "is not one of: success_rate"),
        ("p99_ttft_ms=fast", "needs a number"),
    ],
)
def test_bad_slo_names_the_problem(text: str, message: str) -> None:
    """Guards against a typo in CI silently disabling a gate."""
    with pytest.raises(ValueError, match=message):
        parse_slo(text)
    assert "p99_ttft_ms" in allowed_keys()


def test_violations_cover_every_measured_cell() -> None:
    """Guards against a gate that passes because only the best cell was checked (or a skipped one)."""
    records = load_results(DATA / "l4-mtp-off.jsonl").records
    found = violations([parse_slo("success_rate=0.99"), parse_slo("p99_ttft_ms=2000")], records)
    described = [v.describe() for v in found]
    assert described == [
        "context 128 x concurrency 128: success_rate = 0.875 (SLO >= 0.99)",
        # 32 requests cannot judge a p99 (368 can): the cell fails closed whatever its value.
        (
            "context 128 x concurrency 1: p99_ttft_ms = 120 from 32 requests, too few to judge (a p99 needs >= 368; "
            "SLO <= 2000)"
        ),
        (
            "context 8192 x concurrency 1: p99_ttft_ms = 2,700 from 32 requests, too few to judge (a p99 needs >= 368; "
            "SLO <= 2000)"
        ),
    ]
    assert violations([parse_slo("success_rate=0.5")], records) == []


def test_cost_per_million() -> None:
    """Guards against cost figures off by the hour/second or million conversions."""
    spend = cost(3.6, request_throughput=10.0, output_throughput=1000.0)
    assert spend.per_1m_requests_usd == pytest.approx(100.0)  # $0.001/s / 10 req/s x 1e6
    assert spend.per_1m_output_tokens_usd == pytest.approx(1.0)
    assert cost(None, 10.0, 10.0).per_1m_requests_usd is None
    assert cost(3.6, 0.0, 0.0).per_1m_requests_usd is None


def test_physical_ceiling_flags_the_impossible_16k_numbers() -> None:
    """Guards against the hand-made sweeps' mistake: 16K-context throughput ~25x what an L4 computes.
    An L4 (121 TFLOP/s dense bf16) running a 12B model on 16K+128 tokens per request tops out at
    121e12 / (2 x 12e9 x 16512) = ~0.31 req/s."""
    facts = accelerator_facts("nvidia-l4")
    ceiling = ceiling_request_throughput(facts.peak_flops, 12e9, 16384 + 128)
    assert ceiling == pytest.approx(0.305, abs=0.001)
    assert ceiling_request_throughput(None, 12e9, 100) is None


def test_accelerator_facts_come_from_the_stacks_table() -> None:
    """Guards against FLOP/s copied into verify and drifting from the stacks' table; without a stack the
    price is the accelerator as the shipped stacks deploy it (one price per shape: the L4 run was priced at the
    4-CPU minimum, $1.05/h, while the l4 stack bills $1.42/h), and the basis says so."""
    l4 = resolved_shapes(platform="cloud-run")[0]
    facts = accelerator_facts(l4.accelerator)
    assert facts.peak_flops == l4.peak_dense_bf16_flops
    deployed = hourly_price(deployed_cloud_run_billing(l4.accelerator, None)).usd_per_hour
    assert deployed is not None
    assert facts.price_per_hour_usd == pytest.approx(deployed)
    minimum = hourly_price(minimum_billing(l4.accelerator)).usd_per_hour
    assert minimum is not None
    assert deployed > minimum
    assert facts.price_basis is not None
    assert "no stack: as the shipped stacks deploy it" in facts.price_basis
    tpu = next(shape for shape in resolved_shapes() if shape.is_tpu)
    four_nodes = accelerator_facts(tpu.accelerator, count=4)
    assert tpu.peak_dense_bf16_flops is not None
    assert four_nodes.peak_flops == pytest.approx(4 * tpu.peak_dense_bf16_flops)
    assert accelerator_facts("nvidia-l4", price_override=2.0).price_per_hour_usd == 2.0
    assert accelerator_facts(None).peak_flops is None
    with pytest.raises(ValueError, match="--accelerator 'h100' is not one of: nvidia-l4"):
        accelerator_facts("h100")


L4_BILLING = {
    "kind": "cloud-run",
    "accelerator": "nvidia-l4",
    "region": "us-east4",
    "cpu": 8,
    "memoryGib": 32,
    "gpuZonalRedundancy": False,
    "minInstances": 0,
    "maxInstances": 1,
}


def test_cost_prices_the_stacks_real_shape() -> None:
    """Cost per 1M requests priced an L4 at 4 CPU / 16 GiB while the stack runs 8 / 32 (26% too cheap)."""
    facts = accelerator_facts("nvidia-l4", billing=L4_BILLING)
    assert facts.price_per_hour_usd == pytest.approx((0.0001867 + 8 * 0.000018 + 32 * 0.000002) * 3600)
    assert facts.price_basis is not None
    assert "8 vCPU, 32 GiB" in facts.price_basis
    assert "https://cloud.google.com/run/pricing" in facts.price_basis


def test_flex_start_tpu_is_not_priced_on_demand() -> None:
    """A flex-start v6e node costs $1.35 per chip-hour, not the $2.70 on-demand rate verify used."""
    billing = {
        "kind": "tpu",
        "acceleratorType": "v6e-1",
        "chips": 1,
        "provisioningModel": "flex-start",
        "region": "us-east5",
        "maxRunSeconds": 14400,
    }
    assert accelerator_facts("tpu-v6e", billing=billing).price_per_hour_usd == pytest.approx(1.35)


def test_rtx_pro_6000_bench_has_a_cost() -> None:
    """The RTX PRO 6000 had no price, so bench printed no cost per 1M requests for that stack."""
    billing = {**L4_BILLING, "accelerator": "nvidia-rtx-pro-6000", "region": "us-central1", "cpu": 20, "memoryGib": 80}
    facts = accelerator_facts("nvidia-rtx-pro-6000", billing=billing)
    assert facts.price_per_hour_usd == pytest.approx((0.00036522 + 20 * 0.000018 + 80 * 0.000002) * 3600)


def test_a_billing_output_that_is_not_a_shape_is_a_usage_error() -> None:
    """A stack whose billing output is garbled fails with a message naming it, not a traceback."""
    with pytest.raises(ValueError, match="the stack's billing output is not a billed shape"):
        accelerator_facts("nvidia-l4", billing={"kind": "cloud-run"})


@pytest.mark.parametrize(
    ("name", "params"),
    [("gemma-4-12b-it", 12e9), ("google/gemma-4-E4B-it", 4e9), ("gemma-4-26B-A4B-it", 4e9), ("tiny-gemma", None)],
)
def test_params_from_served_names(name: str, params: float | None) -> None:
    """Guards against a mixture-of-experts model judged by its total (not active) parameters."""
    assert params_from_model_name(name) == params


def test_params_flag() -> None:
    """Guards against --model-params typos passing as a wrong number."""
    assert parse_params("12B") == 12e9
    assert parse_params("3.5e9") == 3.5e9
    with pytest.raises(ValueError, match="--model-params"):
        parse_params("twelve")


def test_platform_verdict() -> None:
    """Guards against attributing non-admission failures (timeouts) to Cloud Run's admission limit."""
    verdict = platform_verdict(128, 64, {"http_429": 10, "read_timeout": 3})
    assert verdict.over_limit
    assert verdict.limited_failures == 10
    assert not platform_verdict(64, 64, {"http_429": 10}).over_limit
    assert not platform_verdict(128, None, {"http_429": 10}).over_limit
