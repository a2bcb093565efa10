"""The HPA of a fleet behind the inference gateway: it scales on what the endpoint picker sees of its pool.

Why the picker's numbers rather than each pod's own: the picker publishes, per InferencePool, the mean
queue depth and the mean KV-cache utilisation of the replicas it routes to (`llm_d_epp_average_queue_size`,
`llm_d_epp_average_kv_cache_utilization`, label `name` = the pool; llm-d-router v0.10.0
pkg/epp/metrics/llm_d_router_metrics.go), the same signals it routes on, so scaling and routing agree.
Managed Prometheus stores them as `prometheus.googleapis.com|<metric>|gauge`, which the Custom Metrics
Stackdriver Adapter serves as External metrics (components/gke/metrics_adapter.py).

Why target type `Value`: each metric is already a mean per replica, so the HPA's rule
desired = ceil(current x value / target) is the right one; `AverageValue` would divide the mean by the
replica count again.
"""

from __future__ import annotations

from typing import Any

from components.gke.manifests import FleetSpec

QUEUE_METRIC = "prometheus.googleapis.com|llm_d_epp_average_queue_size|gauge"
KV_CACHE_METRIC = "prometheus.googleapis.com|llm_d_epp_average_kv_cache_utilization|gauge"


def _external(metric: str, pool: str, namespace: str, target: str) -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {
                "name": metric,
                "selector": {"matchLabels": {"metric.labels.name": pool, "resource.labels.namespace": namespace}},
            },
            "target": {"type": "Value", "value": target},
        },
    }


def picker_autoscaler(
    spec: FleetSpec, *, deployment: str, pool: str, target_kv_cache_utilization: float
) -> dict[str, Any]:
    """Adds a replica when the pool's mean queue passes the per-pod target or its mean KV-cache use passes
    `target_kv_cache_utilization` (whichever asks for more replicas wins, as with any multi-metric HPA)."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {**spec.labels, **spec.selector},
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
            "minReplicas": spec.min_replicas,
            "maxReplicas": spec.max_replicas,
            "metrics": [
                _external(QUEUE_METRIC, pool, spec.namespace, str(spec.target_waiting_per_pod)),
                _external(KV_CACHE_METRIC, pool, spec.namespace, f"{target_kv_cache_utilization:g}"),
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": spec.scale_down_stabilization_seconds}},
        },
    }
