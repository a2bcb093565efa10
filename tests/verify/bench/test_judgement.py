"""Judgement: SLO gates, cost, the physical ceiling and the accelerator facts they rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.accelerators import CLOUD_RUN_GPUS, TPU_CHIPS
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
        "context 128 x concurrency 128: success_rate = 0.875, SLO success_rate >= 0.99",
        "context 8192 x concurrency 1: p99_ttft_ms = 2700, SLO p99_ttft_ms <= 2000",
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
    """Guards against prices and FLOP/s copied into verify and drifting from the stacks' table."""
    l4 = CLOUD_RUN_GPUS[next(iter(CLOUD_RUN_GPUS))]
    facts = accelerator_facts(l4.accelerator.value)
    assert facts.peak_flops == l4.peak_dense_bf16_flops
    assert facts.price_per_hour_usd == l4.hourly_price_usd
    tpu = next(iter(TPU_CHIPS.values()))
    four_chips = accelerator_facts(tpu.accelerator.value, count=4)
    assert tpu.peak_dense_bf16_flops is not None
    assert four_chips.peak_flops == pytest.approx(4 * tpu.peak_dense_bf16_flops)
    assert accelerator_facts("nvidia-l4", price_override=2.0).price_per_hour_usd == 2.0
    assert accelerator_facts(None).peak_flops is None
    with pytest.raises(ValueError, match="--accelerator 'h100' is not one of: nvidia-l4"):
        accelerator_facts("h100")


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
