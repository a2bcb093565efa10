"""The alerts every stack gets: PromQL conditions over vLLM's metrics, with what each means and what to run.

Why these, with these defaults: they are the judgements vLLM's own generated dashboards colour in
(vllm tools/generate_grafana_dashboards.py, read 2026-11: `LOW_IS_GOOD["kv"]` orange 0.9 / red 0.98,
`LOW_IS_GOOD["ratio"]` orange 0.001 / red 0.01 for the 5xx ratio, `SLO` red below 0.9 / green from 0.99
for SLO attainment, attainment as `rate(<histogram>_bucket{le="<threshold>"}) / rate(<histogram>_count)`),
turned into alerts a person is woken by. The TTFT (1.0 s) and TPOT (100 ms) thresholds are that
generator's default SLO choices as this project's notes record them (shared reference anchors, section 3);
they must be bucket bounds of vLLM's histograms, checked against the recorded list. The queue limit
(1.0 s at p95) is this project's choice: a request queued for the whole TTFT budget has missed it.
A stack file overrides any of them (`monitoring.thresholds`), e.g. with `gemma-verify alerts suggest`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, assert_never

from serving.collectors import NODE_UPTIME_METRIC
from serving.promql import Promql, divide
from serving.watch import CloudRunWatch, GkeWatch, TpuWatch, Watched, promql_for

TTFT_HISTOGRAM = "vllm:time_to_first_token_seconds"
TPOT_HISTOGRAM = "vllm:request_time_per_output_token_seconds"
QUEUE_HISTOGRAM = "vllm:request_queue_time_seconds"
# prometheus-fastapi-instrumentator groups statuses (2xx, 4xx, 5xx), as the recorded list shows.
STATUS_5XX = 'status="5xx"'
# How long a condition must hold before it fires, and how long a node may report nothing before it is down.
DEFAULT_FOR_SECONDS = 300
ABSENT_WINDOW = "10m"
# A flex-start run is warned about this long before it ends.
RUN_END_WARNING_SECONDS = 3600

Severity = Literal["WARNING", "CRITICAL"]


@dataclass(frozen=True)
class AlertThresholds:
    """Every number an alert compares with; defaults as the module docstring sources them."""

    kv_cache_warning: float = 0.9
    kv_cache_critical: float = 0.98
    error_ratio_warning: float = 0.001
    error_ratio_critical: float = 0.01
    ttft_seconds: float = 1.0
    tpot_seconds: float = 0.1
    attainment_warning: float = 0.99
    attainment_critical: float = 0.9
    max_queue_seconds: float = 1.0
    # Requests waiting for a batch slot; None: no alert on the count (the queue-time alert still applies).
    max_waiting_requests: int | None = None
    for_seconds: int = DEFAULT_FOR_SECONDS


@dataclass(frozen=True)
class AlertRule:
    """One alert policy: a PromQL condition that fires while it returns a series."""

    key: str
    title: str
    severity: Severity
    promql: str
    for_seconds: int
    # What it means, in a sentence a person paged at night can act on, and the first command to run.
    meaning: str
    first_command: str


def alert_rules(watched: Watched, thresholds: AlertThresholds, *, stack: str) -> list[AlertRule]:
    """The stack's alerts: saturation, queueing, errors, SLO attainment, and (where it means an outage) absence."""
    q = promql_for(watched)
    t = thresholds
    hold = t.for_seconds
    status = f"gemma-verify status --stack {stack}"
    errors = f"gemma-verify logs --stack {stack} --errors"
    health = f"gemma-verify health --stack {stack}"
    kv = q.agg("max", "vllm:kv_cache_usage_perc")
    five_xx = divide(
        f"({q.sum_rate('http_requests_total', STATUS_5XX)} or vector(0))", q.sum_rate("http_requests_total")
    )
    rules = [
        AlertRule(
            "kv-cache-warning",
            f"KV cache above {t.kv_cache_warning:.0%}",
            "WARNING",
            f"{kv} > {t.kv_cache_warning}",
            hold,
            "The fullest engine's KV cache has stayed nearly full: new requests wait for space and running ones "
            "may soon be preempted.",
            health,
        ),
        AlertRule(
            "kv-cache-critical",
            f"KV cache above {t.kv_cache_critical:.0%}",
            "CRITICAL",
            f"{kv} > {t.kv_cache_critical}",
            hold,
            "The KV cache is full: vLLM preempts running requests and queues new ones; latency climbs until load "
            "drops or capacity is added (more instances, a shorter maxModelLen, fewer maxNumSeqs).",
            health,
        ),
        AlertRule(
            "queue-time",
            f"Requests queued longer than {t.max_queue_seconds:g} s (p95)",
            "WARNING",
            f"{q.quantile(0.95, QUEUE_HISTOGRAM)} > {t.max_queue_seconds}",
            hold,
            "One request in twenty waited longer than the stated time before vLLM scheduled it: the server is "
            "past the load it can batch (compare with the stack's bench sweep).",
            health,
        ),
        AlertRule(
            "error-ratio-warning",
            f"5xx above {t.error_ratio_warning:.1%} of requests",
            "WARNING",
            f"{five_xx} > {t.error_ratio_warning}",
            hold,
            "vLLM answered part of its requests with a 5xx status (errors after a stream started are not counted "
            "here; see the finished-reason panel).",
            errors,
        ),
        AlertRule(
            "error-ratio-critical",
            f"5xx above {t.error_ratio_critical:.0%} of requests",
            "CRITICAL",
            f"{five_xx} > {t.error_ratio_critical}",
            hold,
            "A large share of requests fails with a 5xx status: users see errors now.",
            errors,
        ),
        *_attainment_rules(q, Slo("ttft", "TTFT", TTFT_HISTOGRAM, t.ttft_seconds), t, health),
        *_attainment_rules(q, Slo("tpot", "TPOT", TPOT_HISTOGRAM, t.tpot_seconds), t, health),
    ]
    if t.max_waiting_requests is not None:
        rules.append(
            AlertRule(
                "waiting-requests",
                f"More than {t.max_waiting_requests} requests waiting",
                "WARNING",
                f"{q.agg('sum', 'vllm:num_requests_waiting')} > {t.max_waiting_requests}",
                hold,
                "More requests wait for a batch slot than at the load where the stack's own bench sweep broke its SLO.",
                health,
            )
        )
    return rules + _platform_rules(watched, q, stack=stack, status=status)


@dataclass(frozen=True)
class Slo:
    """One latency SLO: a key, its name, the vLLM histogram and the bound (a bucket of it)."""

    key: str
    name: str
    histogram: str
    bound: float


def _attainment_rules(q: Promql, slo: Slo, t: AlertThresholds, command: str) -> list[AlertRule]:
    key, name, bound = slo.key, slo.name, slo.bound
    attained = q.attainment(slo.histogram, bound)
    limit = f"{bound * 1000:g} ms"
    return [
        AlertRule(
            f"{key}-slo-warning",
            f"{name} under {limit} for less than {t.attainment_warning:.0%} of requests",
            "WARNING",
            f"{attained} < {t.attainment_warning}",
            t.for_seconds,
            f"Fewer requests than the SLO asks meet {name} <= {limit}: the stack is slipping toward its limit.",
            command,
        ),
        AlertRule(
            f"{key}-slo-critical",
            f"{name} under {limit} for less than {t.attainment_critical:.0%} of requests",
            "CRITICAL",
            f"{attained} < {t.attainment_critical}",
            t.for_seconds,
            f"More than one request in ten misses {name} <= {limit}: users see slow answers now.",
            command,
        ),
    ]


def _platform_rules(watched: Watched, q: Promql, *, stack: str, status: str) -> list[AlertRule]:
    match watched:
        case CloudRunWatch():
            if not watched.always_serving:
                # At minInstances 0 an idle service has no instance and no metrics: absence is not an outage.
                return []
            return [
                AlertRule(
                    "no-serving-instance",
                    "No vLLM instance reporting",
                    "CRITICAL",
                    q.absent("vllm:num_requests_running", ABSENT_WINDOW),
                    0,
                    f"No instance of {watched.service_name} has reported vLLM metrics for {ABSENT_WINDOW}, though the "
                    "stack keeps at least one running: the revision is failing to start or crashing.",
                    status,
                )
            ]
        case TpuWatch():
            rules = [
                AlertRule(
                    "no-serving-node",
                    "TPU node not serving",
                    "CRITICAL",
                    q.absent("vllm:num_requests_running", ABSENT_WINDOW),
                    0,
                    f"The TPU node {watched.node_name} has reported no vLLM metrics for {ABSENT_WINDOW}: it was "
                    "preempted or deleted, its queued resource failed or is still waiting, or vLLM is down.",
                    status,
                )
            ]
            run = watched.flex_start_run_seconds
            if run is not None:
                rules.append(
                    AlertRule(
                        "flex-start-ending",
                        "Flex-start run ends within the hour",
                        "WARNING",
                        f"max({q.sel(NODE_UPTIME_METRIC)}) > {max(run - RUN_END_WARNING_SECONDS, 0)}",
                        0,
                        f"The node has run for more than its flex-start maximum ({run} s) less an hour: Google deletes "
                        "it when the run ends. Queue the next one now (`pulumi up` after it is gone re-queues it) "
                        "or move traffic elsewhere.",
                        status,
                    )
                )
            return rules
        case GkeWatch():
            if not watched.always_serving:
                return []
            return [
                AlertRule(
                    "no-serving-replica",
                    "No vLLM replica reporting",
                    "CRITICAL",
                    q.absent("vllm:num_requests_running", ABSENT_WINDOW),
                    0,
                    f"No replica of {watched.deployment} in namespace {watched.namespace} has reported vLLM metrics "
                    f"for {ABSENT_WINDOW}, though the fleet keeps at least one: pods are failing to start or no "
                    "accelerator node could be had.",
                    status,
                )
            ]
        case _:  # pragma: no cover - the union has three variants
            assert_never(watched)
