"""Which vLLM metrics a stack's dashboard and alerts depend on: the contract a vLLM release must keep.

Why: a metric vLLM renames leaves its panel empty and its alert silent without an error anywhere. The
tests hold every query to the list recorded from a real server (serving.vllm_metrics), and `verify
promote` holds a candidate's live `/metrics` to the same names before it takes traffic.
"""

from __future__ import annotations

from serving.alert_rules import AlertThresholds, alert_rules
from serving.collectors import COLLECTOR_METRICS
from serving.dashboard_panels import dashboard_sections, promql_of
from serving.vllm_metrics import RecordedMetrics
from serving.watch import Watched, metric_names


def stack_queries(watched: Watched, thresholds: AlertThresholds, *, spec_decode: bool, stack: str) -> list[str]:
    """Every PromQL query of the stack's dashboard and alert policies."""
    panels = promql_of(dashboard_sections(watched, thresholds, spec_decode=spec_decode))
    return panels + [rule.promql for rule in alert_rules(watched, thresholds, stack=stack)]


def vllm_metrics_used(queries: list[str]) -> set[str]:
    """The vLLM server's sample names the queries select (the collectors' own metrics left out)."""
    return {name for query in queries for name in metric_names(query)} - COLLECTOR_METRICS


def unrecorded(names: set[str], recorded: RecordedMetrics) -> set[str]:
    """Names the recorded vLLM release does not export: each would be an empty panel or a silent alert."""
    return names - recorded.sample_names


def missing_from_scrape(names: set[str], exported: set[str]) -> set[str]:
    """Names a live `/metrics` body lacks (``exported``: its sample names)."""
    return names - exported


def spec_decode_on(vllm_args: list[str]) -> bool:
    """Whether a `vllm serve` argument list enables speculative decoding (whose metrics a panel then reads)."""
    return any(arg == "--speculative-config" or arg.startswith("--speculative-config=") for arg in vllm_args)
