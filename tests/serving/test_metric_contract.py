"""Every panel and alert query parses as PromQL and names only metrics vLLM 0.32 really exports."""

from __future__ import annotations

import dataclasses

import promql_parser
import pytest

from serving.alert_rules import AlertThresholds, alert_rules
from serving.collectors import COLLECTOR_METRICS
from serving.dashboard_panels import dashboard_sections, platform_metric_types, promql_of
from serving.metric_contract import missing_from_scrape, spec_decode_on, stack_queries, unrecorded, vllm_metrics_used
from serving.vllm_metrics import recorded_metrics
from serving.watch import CloudRunWatch, GkeWatch, TpuWatch, Watched, metric_names, selector

WATCHED: dict[str, Watched] = {
    "cloud-run-idle": CloudRunWatch("gemma-l4-vllm", min_instances=0),
    "cloud-run-warm": CloudRunWatch("gemma-l4-vllm", min_instances=1),
    "tpu-flex-start": TpuWatch("gemma-tpu-v6e-vllm", flex_start_run_seconds=14400),
    "tpu-spot": TpuWatch("gemma-tpu-v6e-vllm"),
    "gke": GkeWatch("gemma", "gemma-gke-l4x4-vllm", min_replicas=1),
    "gke-parked": GkeWatch("gemma", "gemma-gke-l4x4-vllm", min_replicas=0),
}
EVERY_ALERT = AlertThresholds(max_waiting_requests=4)


def parser_metric_names(query: str) -> set[str]:
    """The metric names a real PromQL parser finds in a query (every vector selector's name)."""
    found: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, promql_parser.VectorSelector) and node.name:
            found.add(node.name)
        return True

    promql_parser.walk(promql_parser.parse(query), pre_visit=visit)
    return found


def all_queries(watched: Watched) -> list[str]:
    return stack_queries(watched, EVERY_ALERT, spec_decode=True, stack="l4")


@pytest.mark.parametrize("kind", sorted(WATCHED))
def test_every_query_parses_and_names_only_recorded_metrics(kind: str) -> None:
    """A typo in a query fails here, not as an empty chart; a metric vLLM 0.32 does not export (renamed, or
    GPU-only) fails here, not as an alert that never fires."""
    recorded = recorded_metrics()
    for query in all_queries(WATCHED[kind]):
        names = parser_metric_names(query)
        assert names, query
        # Our own name extraction (which verify promote uses) agrees with the parser's.
        assert metric_names(query) == names, query
        assert names <= recorded.sample_names | COLLECTOR_METRICS, (query, names - recorded.sample_names)


def test_a_renamed_metric_is_caught() -> None:
    """vLLM once renamed vllm:gpu_cache_usage_perc to vllm:kv_cache_usage_perc: a list without the name our
    panels use must report it (as the next release's recording would)."""
    recorded = recorded_metrics()
    families = {name: family for name, family in recorded.families.items() if name != "vllm:kv_cache_usage_perc"}
    renamed = dataclasses.replace(recorded, families=families)
    used = vllm_metrics_used(all_queries(WATCHED["tpu-spot"]))
    assert unrecorded(used, recorded) == set()
    assert unrecorded(used, renamed) == {"vllm:kv_cache_usage_perc"}


def test_queries_read_only_the_stacks_own_series() -> None:
    """Without the selector an alert would fire on another stack's server in the same project."""
    for kind, watched in WATCHED.items():
        for query in all_queries(watched):
            for name in metric_names(query):
                assert f"{name}{{{selector(watched)}" in query, (kind, query)


def test_panels_cover_what_an_operator_needs() -> None:
    """The issue's list: latency percentiles, queue, KV cache, preemptions, prefix cache, spec decode (with
    MTP), token rates, finished reasons, HTTP status, and the platform's own metrics."""
    for watched in WATCHED.values():
        with_mtp = dashboard_sections(watched, AlertThresholds(), spec_decode=True)
        without = dashboard_sections(watched, AlertThresholds(), spec_decode=False)
        used = vllm_metrics_used(promql_of(with_mtp))
        for name in (
            "vllm:time_to_first_token_seconds_bucket",
            "vllm:request_time_per_output_token_seconds_bucket",
            "vllm:e2e_request_latency_seconds_bucket",
            "vllm:num_requests_running",
            "vllm:num_requests_waiting_by_reason",
            "vllm:kv_cache_usage_perc",
            "vllm:num_preemptions_total",
            "vllm:prefix_cache_hits_total",
            "vllm:spec_decode_num_accepted_tokens_total",
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
            "vllm:request_success_total",
            "http_requests_total",
        ):
            assert name in used, name
        assert not any("spec_decode" in query for query in promql_of(without))
    cloud_run = platform_metric_types(
        dashboard_sections(WATCHED["cloud-run-idle"], AlertThresholds(), spec_decode=False)
    )
    assert cloud_run == [
        "run.googleapis.com/container/instance_count",
        "run.googleapis.com/container/startup_latencies",
        "run.googleapis.com/container/gpu/utilizations",
        "run.googleapis.com/container/gpu/memory_usages",
    ]
    tpu = dashboard_sections(WATCHED["tpu-spot"], AlertThresholds(), spec_decode=False)
    assert any(panel.title == "TPU node state" for section in tpu for panel in section.panels)


def test_alerts_follow_vllms_dashboard_thresholds_by_default() -> None:
    """KV 0.9/0.98, 5xx 0.1%/1%, attainment 99%/90% at TTFT 1 s and TPOT 100 ms (bucket bounds of vLLM's
    histograms, so attainment can be read from a bucket)."""
    rules = {rule.key: rule for rule in alert_rules(WATCHED["cloud-run-idle"], AlertThresholds(), stack="l4")}
    assert rules["kv-cache-warning"].promql.endswith("> 0.9")
    assert rules["kv-cache-critical"].promql.endswith("> 0.98")
    assert rules["error-ratio-warning"].promql.endswith("> 0.001")
    assert rules["error-ratio-critical"].promql.endswith("> 0.01")
    assert rules["ttft-slo-warning"].promql.endswith("< 0.99")
    assert rules["ttft-slo-critical"].promql.endswith("< 0.9")
    assert 'le="1.0"' in rules["ttft-slo-warning"].promql
    assert 'le="0.1"' in rules["tpot-slo-warning"].promql
    assert "vllm:request_queue_time_seconds_bucket" in rules["queue-time"].promql
    assert {rule.severity for rule in rules.values()} == {"WARNING", "CRITICAL"}
    recorded = recorded_metrics()
    assert 1.0 in recorded.buckets("vllm:time_to_first_token_seconds")
    assert 0.1 in recorded.buckets("vllm:request_time_per_output_token_seconds")


def test_absence_alerts_only_where_absence_is_an_outage() -> None:
    """A Cloud Run service at minInstances 0 has no instance when idle (not an outage); a warm service and a
    TPU node that stop reporting are down; only a flex-start node has a run that ends by itself."""

    def keys(watched: Watched) -> set[str]:
        return {rule.key for rule in alert_rules(watched, AlertThresholds(), stack="s")}

    assert "no-serving-instance" not in keys(WATCHED["cloud-run-idle"])
    assert "no-serving-instance" in keys(WATCHED["cloud-run-warm"])
    assert "no-serving-node" in keys(WATCHED["tpu-spot"])
    assert "flex-start-ending" not in keys(WATCHED["tpu-spot"])
    # A GKE fleet's HPA keeps one replica unless the stack is parked (the Deployment at 0).
    assert "no-serving-replica" in keys(WATCHED["gke"])
    assert "no-serving-replica" not in keys(WATCHED["gke-parked"])
    (ending,) = [r for r in alert_rules(WATCHED["tpu-flex-start"], AlertThresholds(), stack="s") if "flex" in r.key]
    assert ending.promql.endswith("> 10800")  # 4 h run, warned an hour before its end


def test_every_alert_says_what_to_run_first() -> None:
    """Someone paged at night reads the policy's documentation: a meaning and one command."""
    for watched in WATCHED.values():
        for rule in alert_rules(watched, EVERY_ALERT, stack="l4"):
            assert rule.meaning.endswith(".")
            assert rule.first_command.startswith("gemma-verify ")
            assert "--stack l4" in rule.first_command


def test_the_recorded_list_is_real_vllm_output() -> None:
    """The list comes from a real vLLM 0.32 server, with and without speculative decoding."""
    recorded = recorded_metrics()
    assert recorded.release == "0.32.0"
    assert "record_vllm_metrics.py" in recorded.source
    spec = recorded.families["vllm:spec_decode_num_draft_tokens"]
    assert spec.servers == ("ngram-spec-decode",)
    assert recorded.families["vllm:kv_cache_usage_perc"].servers == ("default", "ngram-spec-decode")
    assert "status" in recorded.families["http_requests"].labels
    assert "vllm:gpu_cache_usage_perc" not in recorded.sample_names


def test_promote_side_helpers() -> None:
    """What verify promote checks: names missing from a scrape, and whether MTP panels apply."""
    assert missing_from_scrape({"a", "b"}, {"a"}) == {"b"}
    assert spec_decode_on(["/m", "--speculative-config", "{}"])
    assert not spec_decode_on(["/m", "--max-num-seqs", "4"])
