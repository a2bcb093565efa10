"""What collects vLLM's `/metrics` into Managed Service for Prometheus on each platform, and its config.

Why one family of collectors: a Cloud Run service gets Google's Managed Service for Prometheus sidecar
(GoogleCloudPlatform/run-gmp-sidecar, an OpenTelemetry Collector distribution built for Cloud Run), and
a TPU VM runs the Google-Built OpenTelemetry Collector (`otelcol-google`, the same receiver and the same
`googlemanagedprometheus` exporter) beside vLLM. Both write `prometheus_target` series with
`namespace=<service or node name>`, so one set of PromQL panels and alerts reads either (serving.promql).
GKE stacks, where they exist, use PodMonitoring instead (Google's managed collection).

Images are pinned by release tag (neither lives on Docker Hub, so the stack's Docker Hub mirror does not
apply; both are Google's public Artifact Registry images). Their digests could not be read offline:
pin a digest (`...@sha256:`) once `gcloud artifacts docker images describe` has shown it.
"""

from __future__ import annotations

import json

import yaml

from serving.naming import RUN_MONITORING_NAME, TPU_SCRAPE_JOB

# Source: GoogleCloudPlatform/run-gmp-sidecar (git tag 1.7.0; README "Run GMP Sidecar"; Google's page
# cloud.google.com/run/docs/monitoring-managed-prometheus-sidecar names this repository's image path).
RUN_GMP_SIDECAR_IMAGE = "us-docker.pkg.dev/cloud-ops-agents-artifacts/cloud-run-gmp-sidecar/cloud-run-gmp-sidecar:1.7.0"
# Source: GoogleCloudPlatform/opentelemetry-operations-collector google-built-opentelemetry-collector/manifest.yaml
# (prometheus receiver, hostmetrics, resource and resourcedetection processors, googlemanagedprometheus exporter,
# health_check extension are all in the distribution).
OTELCOL_GOOGLE_IMAGE = (
    "us-docker.pkg.dev/cloud-ops-agents-artifacts/google-cloud-opentelemetry-collector/otelcol-google:0.159.0"
)
# The role a collector's identity needs to write metrics (the prerequisites of run-gmp-sidecar's own readme).
METRIC_WRITER_ROLE = "roles/monitoring.metricWriter"
# run-gmp-sidecar's own default (confgenerator.DefaultRunMonitoringConfig: 30s); the TPU collector matches it.
SCRAPE_INTERVAL = "30s"
# Where the sidecar reads a custom RunMonitoring config (run-gmp-sidecar entrypoint.go, userConfigFile).
RUN_GMP_CONFIG_DIR = "/etc/rungmp"
RUN_GMP_CONFIG_FILE = "config.yaml"
# The sidecar's liveness endpoint (entrypoint.go: livenessProbePort 13133, path /liveness).
RUN_GMP_LIVENESS_PORT = 13133
RUN_GMP_LIVENESS_PATH = "/liveness"
# How often the sidecar's liveness probe runs and how long one attempt may take. Cloud Run refuses a
# timeout that is not smaller than the period (pulumi_gcp's ServiceTemplateContainerLivenessProbeArgs:
# "Must be smaller than periodSeconds"; https://cloud.google.com/run/docs/reference/rest/v2/Container#probe).
# The endpoint answers on loopback, so 10 s is ample.
RUN_GMP_LIVENESS_PERIOD_SECONDS = 30
RUN_GMP_LIVENESS_TIMEOUT_SECONDS = 10
# The TPU collector's `cluster` label, beside Cloud Run's `__run__` (set by the sidecar itself).
TPU_CLUSTER_LABEL = "__tpu__"
# How the OTel `system.uptime` gauge (hostmetrics `system` scraper: seconds since the VM booted) is named in
# Managed Prometheus with `add_metric_suffixes: false` (dots become underscores). Not a vLLM metric: the
# flex-start alert reads it from the TPU collector. Unconfirmed offline: check it in Metrics Explorer.
NODE_UPTIME_METRIC = "system_uptime"
# Collector metrics a panel or alert may name beside vLLM's recorded ones (serving.vllm_metrics).
COLLECTOR_METRICS = frozenset({NODE_UPTIME_METRIC})


def run_monitoring_config(*, port: int, interval: str = SCRAPE_INTERVAL) -> str:
    """The sidecar's RunMonitoring config: scrape vLLM's port (the default config scrapes 8080 only).

    Fields as confgenerator.RunMonitoringConfig reads them (apiVersion monitoring.googleapis.com/v1beta,
    spec.endpoints[{port, path, interval}], spec.targetLabels.metadata), strict YAML.
    """
    config = {
        "apiVersion": "monitoring.googleapis.com/v1beta",
        "kind": "RunMonitoring",
        "metadata": {"name": RUN_MONITORING_NAME},
        "spec": {
            "endpoints": [{"port": str(port), "path": "/metrics", "interval": interval}],
            "targetLabels": {"metadata": ["instance", "revision", "service", "configuration"]},
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


def tpu_collector_config(*, port: int, namespace: str, interval: str = SCRAPE_INTERVAL) -> str:
    """The TPU node's otelcol-google config: vLLM's /metrics and the VM's uptime, to Managed Prometheus.

    The `resource` processor sets `namespace` and `cluster` as the run-gmp sidecar does for Cloud Run (its
    generated config moves them to resource attributes with groupbyattrs), so the same PromQL selector reads
    both platforms; `add_metric_suffixes: false` keeps vLLM's names as written, as the sidecar's exporter does.
    """
    config = {
        "receivers": {
            "prometheus": {
                "config": {
                    "scrape_configs": [
                        {
                            "job_name": TPU_SCRAPE_JOB,
                            "scrape_interval": interval,
                            "metrics_path": "/metrics",
                            "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
                        }
                    ]
                }
            },
            "hostmetrics": {"collection_interval": "60s", "scrapers": {"system": {}}},
        },
        "processors": {
            "resourcedetection": {"detectors": ["gcp"]},
            "resource": {
                "attributes": [
                    {"key": "namespace", "value": namespace, "action": "upsert"},
                    {"key": "cluster", "value": TPU_CLUSTER_LABEL, "action": "upsert"},
                ]
            },
            "batch": {},
        },
        "exporters": {"googlemanagedprometheus": {"metric": {"add_metric_suffixes": False}}},
        "extensions": {"health_check": {"endpoint": "127.0.0.1:13133"}},
        "service": {
            "extensions": ["health_check"],
            "pipelines": {
                "metrics": {
                    "receivers": ["prometheus", "hostmetrics"],
                    "processors": ["resourcedetection", "resource", "batch"],
                    "exporters": ["googlemanagedprometheus"],
                }
            },
        },
    }
    # One line of JSON (which is YAML): it sits in the startup script's data block, which the plan shows.
    return json.dumps(config)
