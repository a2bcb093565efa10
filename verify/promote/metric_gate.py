"""The metric gate of a promotion: the candidate's live `/metrics` exports every metric the stack watches.

Why a gate: a vLLM release that renames a metric (as `vllm:gpu_cache_usage_perc` became
`vllm:kv_cache_usage_perc`) passes every health and latency check, then leaves the stack's dashboard panel
empty and its alert silent for as long as the revision serves. The names are the ones the stack's panels
and alerts use (serving.metric_contract, read from its `vllmArgs` output: with speculative decoding its
acceptance panel's too), so the gate and the dashboards cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client.parser import text_string_to_metric_families

from serving.alert_rules import AlertThresholds
from serving.metric_contract import missing_from_scrape, spec_decode_on, stack_queries, vllm_metrics_used
from serving.watch import CloudRunWatch

# A placeholder service name, not the candidate tag: the queries are built only to collect the metric names
# they read, and those do not depend on the service (only each query's selector does).
_PLACEHOLDER_SERVICE = "any-service"
# Every alert on: the waiting-requests alert's metric counts even where the stack does not set it yet.
_EVERY_ALERT = AlertThresholds(max_waiting_requests=1)


def required_metrics(stack: str, vllm_args: Sequence[str]) -> frozenset[str]:
    """The vLLM metric names the stack's dashboard and alerts read (``vllm_args``: its `vllmArgs` output)."""
    watched = CloudRunWatch(_PLACEHOLDER_SERVICE, min_instances=1)
    queries = stack_queries(watched, _EVERY_ALERT, spec_decode=spec_decode_on(list(vllm_args)), stack=stack)
    return frozenset(vllm_metrics_used(queries))


def exported_names(text: str) -> set[str]:
    """The sample names a `/metrics` body exports (`vllm:prompt_tokens_total`, `..._bucket`, ...)."""
    return {str(sample.name) for family in text_string_to_metric_families(text) for sample in family.samples}


def missing_metrics(required: frozenset[str], text: str) -> set[str]:
    return missing_from_scrape(set(required), exported_names(text))
