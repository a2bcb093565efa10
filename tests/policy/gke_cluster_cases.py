"""Crafted GKE Cluster and NodePool properties for policy/gke_cluster.py, for tests/policy/test_rules.py's
run over every guardrail: the shipped gke-l4x4 plan's own cluster and system pool pass, and one way to break
each promise is refused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from policy.gke_cluster import GKE_CLUSTER, GKE_NODE_POOL, GKE_PRIVATE_LEAST_PRIVILEGE
from policy.guardrail import Guardrail
from policy.props import unwrap
from tests.conftest import render_stack

GkeCase = tuple[str, Guardrail, str, Callable[[], dict[str, Any]], str | None]


def planned(resource_type: str) -> list[dict[str, Any]]:
    """The gke-l4x4 plan's resources of one type, as plain properties."""
    capture = render_stack("gke-l4x4")
    return [unwrap(copy.deepcopy(r.inputs)) for r in capture.resources if r.type == resource_type]


def cluster() -> dict[str, Any]:
    [found] = planned(GKE_CLUSTER)
    return found


def system_pool() -> dict[str, Any]:
    return next(pool for pool in planned(GKE_NODE_POOL) if pool["name"] == "system")


def edited(build: Callable[[], dict[str, Any]], edit: Callable[[dict[str, Any]], None]) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        props = build()
        edit(props)
        return props

    return make


def default_account(props: dict[str, Any]) -> None:
    props["nodeConfig"]["serviceAccount"] = "123456789012-compute@developer.gserviceaccount.com"


def public_nodes(props: dict[str, Any]) -> None:
    props["privateClusterConfig"]["enablePrivateNodes"] = False


GKE_CLUSTER_GOOD: list[GkeCase] = [
    ("private-cluster", GKE_PRIVATE_LEAST_PRIVILEGE, GKE_CLUSTER, cluster, None),
    ("system-pool-own-account", GKE_PRIVATE_LEAST_PRIVILEGE, GKE_NODE_POOL, system_pool, None),
]
GKE_CLUSTER_BAD: list[GkeCase] = [
    (
        "system-pool-default-account",
        GKE_PRIVATE_LEAST_PRIVILEGE,
        GKE_NODE_POOL,
        edited(system_pool, default_account),
        "is the Compute Engine default account",
    ),
    (
        "public-nodes",
        GKE_PRIVATE_LEAST_PRIVILEGE,
        GKE_CLUSTER,
        edited(cluster, public_nodes),
        "enablePrivateNodes must be true",
    ),
]
