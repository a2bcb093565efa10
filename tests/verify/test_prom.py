"""The /metrics summary: vLLM's Prometheus text reduced to the numbers that explain a deployment."""

from __future__ import annotations

import pytest

from tests.fake_vllm import FakeVllmConfig, MetricsValues, SpecDecodeValues, metrics_text
from verify.prom import MetricsParseError, parse_metrics

# Lines recorded from a real `vllm serve` 0.32.0 (CPU build, tiny-gemma) GET /metrics.
REAL_VLLM_032 = """\
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 14899.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny-gemma"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny-gemma"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tiny-gemma"} 0.0
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny-gemma"} 75.0
# HELP vllm:prefix_cache_queries_created Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_created gauge
vllm:prefix_cache_queries_created{engine="0",model_name="tiny-gemma"} 1.7953127343004692e+09
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tiny-gemma"} 15.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="tiny-gemma"} 0.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny-gemma"} 88.0
vllm:cache_config_info{block_size="128",cache_dtype="auto",engine="0",enable_prefix_caching="True"} 1.0
"""


def test_real_vllm_text_is_summarised() -> None:
    """The parser must read what vLLM 0.32 really writes (colons in names, _total/_created pairs)."""
    metrics = parse_metrics(REAL_VLLM_032, model="tiny-gemma")
    assert metrics.is_vllm
    assert metrics.model_names == ("tiny-gemma",)
    assert (metrics.running, metrics.waiting, metrics.kv_cache_usage) == (0.0, 0.0, 0.0)
    assert metrics.prefix_cache_hit_rate == pytest.approx(15 / 75)
    assert metrics.preemptions == 0.0
    assert metrics.generation_tokens == 88.0
    assert metrics.prompt_tokens is None  # not in this excerpt: absent, not zero


def test_without_spec_decode_series_acceptance_is_absent_not_zero() -> None:
    """Spec decode off must read "off", never "0% acceptance" (which would look like a broken drafter)."""
    metrics = parse_metrics(metrics_text(FakeVllmConfig()))
    assert not metrics.spec_decode_enabled
    assert metrics.spec_decode_acceptance_rate is None
    assert metrics.spec_decode_mean_acceptance_length is None


def test_spec_decode_acceptance_is_accepted_over_draft_tokens() -> None:
    """Acceptance rate = accepted / draft tokens (vLLM's definition), not accepted / drafts."""
    config = FakeVllmConfig(spec_decode=SpecDecodeValues(drafts=100, draft_tokens=300, accepted_tokens=210))
    metrics = parse_metrics(metrics_text(config))
    assert metrics.spec_decode_enabled
    assert metrics.spec_decode_acceptance_rate == pytest.approx(0.7)
    assert metrics.spec_decode_mean_acceptance_length == pytest.approx(3.1)


def test_gauges_and_counters_from_the_fake_match_its_settings() -> None:
    values = MetricsValues(running=3, waiting=7, kv_cache_usage=0.42, prefix_cache_queries=0, preemptions=2)
    metrics = parse_metrics(metrics_text(FakeVllmConfig(metrics=values)))
    assert (metrics.running, metrics.waiting, metrics.kv_cache_usage, metrics.preemptions) == (3, 7, 0.42, 2)
    assert metrics.prefix_cache_hit_rate is None  # no queries yet: undefined, not 0%


def test_engines_are_summed_and_the_fullest_kv_cache_wins() -> None:
    """Data-parallel servers export one series per engine; a mean would hide the engine that preempts."""
    text = "\n".join(
        [
            "# TYPE vllm:num_requests_running gauge",
            'vllm:num_requests_running{engine="0",model_name="m"} 2.0',
            'vllm:num_requests_running{engine="1",model_name="m"} 5.0',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2',
            'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.9',
            'vllm:kv_cache_usage_perc{engine="0",model_name="other"} 1.0',
        ]
    )
    metrics = parse_metrics(text + "\n", model="m")
    assert metrics.running == 7.0
    assert metrics.kv_cache_usage == 0.9
    assert metrics.model_names == ("m", "other")


def test_since_reports_counter_changes_and_survives_a_restart() -> None:
    """Before/after snapshots must give what a run caused; a restarted server (counter went down) must
    not produce negative numbers."""
    before = parse_metrics(metrics_text(FakeVllmConfig(metrics=MetricsValues(generation_tokens=100, preemptions=5))))
    after = parse_metrics(metrics_text(FakeVllmConfig(metrics=MetricsValues(generation_tokens=160, preemptions=2))))
    delta = after.since(before)
    assert delta.generation_tokens == 60
    assert delta.preemptions == 2


@pytest.mark.parametrize(
    "body",
    ['vllm:num_requests_running{engine="0" 1.0\n', "<html><body>502 Bad Gateway</body></html>\n"],
)
def test_not_prometheus_text_is_an_error(body: str) -> None:
    """An HTML page from a proxy must be reported as such, not as a server with no requests."""
    with pytest.raises(MetricsParseError):
        parse_metrics(body)
