"""The one list of panels every stack's dashboard is generated from.

Why one list: a panel is a query over metrics vLLM (or the platform) really exports, and the tests
check each against the recorded list (serving.vllm_metrics) and Google's Dashboard schema; writing
dashboards by hand per stack would let one drift. vLLM's panels follow its own dashboard generator
(vllm tools/generate_grafana_dashboards.py: latency percentiles from the histograms, scheduler queue,
KV cache, preemptions, cache hit rate, speculative-decoding acceptance, token rates, finished reasons,
HTTP status); the platform's come from Cloud Monitoring's built-in metrics (no sidecar needed):
cloud.google.com/run/docs/monitoring (instance count, startup latency, GPU utilisation and memory)
and the TPU VM's `tpu.googleapis.com/accelerator/*` metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from serving.alert_rules import QUEUE_HISTOGRAM, TPOT_HISTOGRAM, TTFT_HISTOGRAM, AlertThresholds
from serving.collectors import NODE_UPTIME_METRIC
from serving.promql import Promql
from serving.watch import CloudRunWatch, GkeWatch, TpuWatch, Watched, promql_for

E2E_HISTOGRAM = "vllm:e2e_request_latency_seconds"
QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class Series:
    """One line of a chart: a PromQL query and its legend."""

    legend: str
    promql: str


@dataclass(frozen=True)
class PromPanel:
    """A chart of PromQL queries over the collected (Managed Prometheus) metrics."""

    title: str
    description: str
    series: tuple[Series, ...]
    unit: str = ""


@dataclass(frozen=True)
class PlatformPanel:
    """A chart of one of Google's built-in metrics (Cloud Monitoring filter and aggregation)."""

    title: str
    description: str
    metric_type: str
    resource_filter: str
    aligner: str
    reducer: str
    group_by: tuple[str, ...] = ()
    unit: str = ""

    @property
    def filter(self) -> str:
        return f'metric.type="{self.metric_type}" {self.resource_filter}'.strip()


Panel = PromPanel | PlatformPanel


@dataclass(frozen=True)
class Section:
    title: str
    panels: tuple[Panel, ...]


def dashboard_sections(watched: Watched, thresholds: AlertThresholds, *, spec_decode: bool) -> list[Section]:
    """The stack's dashboard: vLLM's view of the requests, then the platform's view of the machine."""
    q = promql_for(watched)
    return [
        Section("Latency", _latency(q, thresholds)),
        Section("Load and cache", _load(q, spec_decode=spec_decode)),
        Section("Throughput and outcomes", _outcomes(q)),
        Section("Platform", _platform(watched, q)),
    ]


def _percentiles(q: Promql, histogram: str) -> tuple[Series, ...]:
    return tuple(Series(f"p{round(quantile * 100)}", q.quantile(quantile, histogram)) for quantile in QUANTILES)


def _latency(q: Promql, t: AlertThresholds) -> tuple[Panel, ...]:
    return (
        PromPanel(
            "Time to first token",
            f"p50/p95/p99 of `{TTFT_HISTOGRAM}`: queueing, prefill and the first decode step.",
            _percentiles(q, TTFT_HISTOGRAM),
            "s",
        ),
        PromPanel(
            "Time per output token",
            f"p50/p95/p99 of `{TPOT_HISTOGRAM}` (each request's mean time between output tokens).",
            _percentiles(q, TPOT_HISTOGRAM),
            "s",
        ),
        PromPanel(
            "End-to-end latency",
            f"p50/p95/p99 of `{E2E_HISTOGRAM}`, from arrival to the last token.",
            _percentiles(q, E2E_HISTOGRAM),
            "s",
        ),
        PromPanel(
            "SLO attainment",
            f"Share of requests with TTFT <= {t.ttft_seconds:g} s and TPOT <= {t.tpot_seconds * 1000:g} ms "
            f"(the alerts warn below {t.attainment_warning:.0%} and page below {t.attainment_critical:.0%}).",
            (
                Series("TTFT", q.attainment(TTFT_HISTOGRAM, t.ttft_seconds)),
                Series("TPOT", q.attainment(TPOT_HISTOGRAM, t.tpot_seconds)),
            ),
            "10^2.%",
        ),
        PromPanel(
            "Queue time",
            f"p95 of `{QUEUE_HISTOGRAM}`: how long requests waited before vLLM scheduled them.",
            (Series("p95", q.quantile(0.95, QUEUE_HISTOGRAM)),),
            "s",
        ),
    )


def _load(q: Promql, *, spec_decode: bool) -> tuple[Panel, ...]:
    waiting = "vllm:num_requests_waiting_by_reason"
    accepted, drafted = "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"
    panels: list[Panel] = [
        PromPanel(
            "Running and waiting requests",
            "Requests in the batch and requests waiting (capacity: KV cache or batch slots; deferred: a transient "
            "constraint).",
            (
                Series("running", q.agg("sum", "vllm:num_requests_running")),
                Series("waiting: capacity", q.agg("sum", waiting, 'reason="capacity"')),
                Series("waiting: deferred", q.agg("sum", waiting, 'reason="deferred"')),
            ),
        ),
        PromPanel(
            "KV cache usage",
            "Fraction of KV cache blocks in use (the fullest engine and the mean); near 1 new requests wait and "
            "running ones may be preempted.",
            (
                Series("max", q.agg("max", "vllm:kv_cache_usage_perc")),
                Series("mean", q.agg("avg", "vllm:kv_cache_usage_perc")),
            ),
            "10^2.%",
        ),
        PromPanel(
            "Preemptions / s",
            "Requests preempted for want of KV cache (they are recomputed later).",
            (Series("preemptions", q.sum_rate("vllm:num_preemptions_total")),),
            "1/s",
        ),
        PromPanel(
            "Prefix cache hit rate",
            "Share of prompt tokens looked up in the prefix cache that were already cached.",
            (Series("hit rate", q.ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")),),
            "10^2.%",
        ),
    ]
    if spec_decode:
        panels.append(
            PromPanel(
                "Speculative decoding acceptance",
                "Accepted / proposed draft tokens (vLLM's acceptance rate) and tokens emitted per drafting step.",
                (
                    Series("acceptance rate", q.ratio(accepted, drafted)),
                    Series("mean acceptance length", f"1 + {q.ratio(accepted, 'vllm:spec_decode_num_drafts_total')}"),
                ),
            )
        )
    return tuple(panels)


def _outcomes(q: Promql) -> tuple[Panel, ...]:
    return (
        PromPanel(
            "Tokens / s",
            "Prompt tokens (cached ones included) and generated tokens per second.",
            (
                Series("prompt", q.sum_rate("vllm:prompt_tokens_total")),
                Series("generation", q.sum_rate("vllm:generation_tokens_total")),
            ),
            "1/s",
        ),
        PromPanel(
            "Finished requests by reason",
            "stop, length, abort, error, repetition, per second.",
            (Series("{{finished_reason}}", q.sum_rate("vllm:request_success_total", by="finished_reason")),),
            "1/s",
        ),
        PromPanel(
            "HTTP responses by status",
            "API responses per second by status class (2xx, 4xx, 5xx).",
            (Series("{{status}}", q.sum_rate("http_requests_total", by="status")),),
            "1/s",
        ),
    )


def _platform(watched: Watched, q: Promql) -> tuple[Panel, ...]:
    match watched:
        case CloudRunWatch():
            revision = f'resource.type="cloud_run_revision" resource.label."service_name"="{watched.service_name}"'
            return (
                PlatformPanel(
                    "Cloud Run instances",
                    "Instances of the service by state (active, idle).",
                    "run.googleapis.com/container/instance_count",
                    revision,
                    "ALIGN_MAX",
                    "REDUCE_SUM",
                    ("metric.label.state",),
                ),
                PlatformPanel(
                    "Container startup latency (p95)",
                    "Time to start a new instance, the model load included: the cold start users wait through.",
                    "run.googleapis.com/container/startup_latencies",
                    revision,
                    "ALIGN_DELTA",
                    "REDUCE_PERCENTILE_95",
                    unit="ms",
                ),
                PlatformPanel(
                    "GPU utilisation (p95)",
                    "How busy the instances' GPU is.",
                    "run.googleapis.com/container/gpu/utilizations",
                    revision,
                    "ALIGN_DELTA",
                    "REDUCE_PERCENTILE_95",
                    unit="10^2.%",
                ),
                PlatformPanel(
                    "GPU memory used (p95)",
                    "GPU memory in use (vLLM reserves gpuMemoryUtilization of it at start).",
                    "run.googleapis.com/container/gpu/memory_usages",
                    revision,
                    "ALIGN_DELTA",
                    "REDUCE_PERCENTILE_95",
                    unit="By",
                ),
            )
        case TpuWatch():
            return (
                PromPanel(
                    "TPU node state",
                    "vLLM engines reporting from the node (0: preempted, deleted, still queued, or vLLM down) and "
                    "the node's uptime in hours (a flex-start node is deleted when its run ends).",
                    (
                        Series("engines reporting", f"count({q.sel('vllm:num_requests_running')}) or vector(0)"),
                        Series("uptime (h)", f"max({q.sel(NODE_UPTIME_METRIC)}) / 3600"),
                    ),
                ),
                PlatformPanel(
                    "TPU duty cycle",
                    "Share of time the TPU chips were busy.",
                    "tpu.googleapis.com/accelerator/duty_cycle",
                    "",
                    "ALIGN_MEAN",
                    "REDUCE_MEAN",
                    unit="%",
                ),
                PlatformPanel(
                    "TPU memory used",
                    "High-bandwidth memory in use on the chips.",
                    "tpu.googleapis.com/accelerator/memory_used",
                    "",
                    "ALIGN_MEAN",
                    "REDUCE_SUM",
                    unit="By",
                ),
            )
        case GkeWatch():
            return (
                PromPanel(
                    "Replicas reporting",
                    "vLLM replicas whose metrics the PodMonitoring scrapes (the HPA scales them on the queue).",
                    (Series("replicas", f"count({q.sel('vllm:num_requests_running')}) or vector(0)"),),
                ),
            )
        case _:  # pragma: no cover - the union has three variants
            assert_never(watched)


def promql_of(sections: list[Section]) -> list[str]:
    """Every PromQL query of a dashboard, for the checks that parse them and match their metric names."""
    panels = [panel for section in sections for panel in section.panels]
    return [series.promql for panel in panels if isinstance(panel, PromPanel) for series in panel.series]


def platform_metric_types(sections: list[Section]) -> list[str]:
    return [panel.metric_type for section in sections for panel in section.panels if isinstance(panel, PlatformPanel)]
