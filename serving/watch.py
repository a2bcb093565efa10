"""What a stack's dashboard and alerts watch: its Cloud Run service or its TPU node, by name.

Why a type per platform: what "no serving instance" means differs (a Cloud Run service at zero
instances is idle, not down, unless the stack keeps one warm; a TPU node that stops reporting was
preempted, failed or crashed), and only a flex-start node has a run that ends by itself. Readers match
the union once; the PromQL selector (`namespace="<name>"`, serving.promql) is the same on both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from serving.promql import Promql

_NAME = re.compile(r"^[a-z][-a-z0-9]{0,62}$")
METRIC_NAME = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{")


@dataclass(frozen=True)
class CloudRunWatch:
    """A Cloud Run GPU service (its name is the `namespace` the sidecar writes)."""

    service_name: str
    min_instances: int

    @property
    def name(self) -> str:
        return self.service_name

    @property
    def always_serving(self) -> bool:
        """Whether an instance should always exist (minInstances >= 1): only then is none an outage."""
        return self.min_instances >= 1


@dataclass(frozen=True)
class TpuWatch:
    """A TPU VM node (its name is the `namespace` its collector writes)."""

    node_name: str
    # A flex-start node's maximum run, in seconds; None for spot and guaranteed nodes.
    flex_start_run_seconds: int | None = None

    @property
    def name(self) -> str:
        return self.node_name

    @property
    def always_serving(self) -> bool:
        return True


@dataclass(frozen=True)
class GkeWatch:
    """A GKE fleet, scraped by its PodMonitoring: Managed Prometheus labels its series with the Kubernetes
    namespace and `job=<PodMonitoring name>` (the Deployment's name), which one namespace's stacks tell apart."""

    namespace: str
    deployment: str
    # 0 when the stack is parked (the Deployment at 0 replicas): then no replica is not an outage.
    min_replicas: int

    @property
    def name(self) -> str:
        return self.deployment

    @property
    def always_serving(self) -> bool:
        return self.min_replicas >= 1


Watched = CloudRunWatch | TpuWatch | GkeWatch


def selector(watched: Watched) -> str:
    """The label selector of the stack's own series (every panel and alert carries it)."""
    names = [watched.name, *([watched.namespace] if isinstance(watched, GkeWatch) else [])]
    for name in names:
        if not _NAME.match(name):
            raise ValueError(f"watched name {name!r}: a service, node, namespace or Deployment name (lowercase, '-')")
    if isinstance(watched, GkeWatch):
        return f'namespace="{watched.namespace}", job="{watched.deployment}"'
    return f'namespace="{watched.name}"'


def promql_for(watched: Watched) -> Promql:
    return Promql(selector=selector(watched))


def metric_names(promql: str) -> set[str]:
    """The metric names a query of ours selects (every selector of ours carries `{...}`).

    The tests check this against a real PromQL parser's view of every query the stacks make.
    """
    return set(METRIC_NAME.findall(promql))
