"""The pack refuses a GKE cluster or node pool that is public or runs as the Compute Engine default account.

The red team's finding was the system pool on the default account with the cloud-platform scope, a public
control plane and nodes with external IPs. The component no longer makes them; this rule makes sure a
hand-written pool or a later refactor cannot either. Each case starts from the shipped gke-l4x4 plan's own
properties (which pass) and breaks one promise, as an attacker editing the program would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policy.gke_cluster import GKE_CLUSTER, GKE_NODE_POOL, GKE_PRIVATE_LEAST_PRIVILEGE
from tests.policy.gke_cluster_cases import cluster, default_account, planned, public_nodes, system_pool
from tests.policy.props import reported


def test_the_shipped_cluster_and_pools_pass() -> None:
    assert reported(GKE_PRIVATE_LEAST_PRIVILEGE, GKE_CLUSTER, cluster()) == []
    for pool in planned(GKE_NODE_POOL):
        assert reported(GKE_PRIVATE_LEAST_PRIVILEGE, GKE_NODE_POOL, pool) == []


def _drop_account(props: dict[str, Any]) -> None:
    del props["nodeConfig"]["serviceAccount"]


def _no_secure_boot(props: dict[str, Any]) -> None:
    props["nodeConfig"]["shieldedInstanceConfig"] = {"enableIntegrityMonitoring": True}


def _public_pool(props: dict[str, Any]) -> None:
    props["networkConfig"] = {"enablePrivateNodes": False}


@pytest.mark.parametrize(
    ("edit", "phrase"),
    [
        (_drop_account, "Compute Engine default account"),
        (default_account, "is the Compute Engine default account"),
        (_no_secure_boot, "enableSecureBoot"),
        (_public_pool, "external IPs"),
    ],
    ids=["no-account", "default-account", "no-secure-boot", "public-pool"],
)
def test_a_node_pool_that_breaks_a_promise_is_refused(edit: Callable[[dict[str, Any]], None], phrase: str) -> None:
    pool = system_pool()
    edit(pool)
    messages = reported(GKE_PRIVATE_LEAST_PRIVILEGE, GKE_NODE_POOL, pool)
    assert any(phrase in message for message in messages), messages


def _open_endpoint(props: dict[str, Any]) -> None:
    props["privateClusterConfig"]["enablePrivateEndpoint"] = False


def _internet_in_halves(props: dict[str, Any]) -> None:
    props["privateClusterConfig"]["enablePrivateEndpoint"] = False
    props["masterAuthorizedNetworksConfig"]["cidrBlocks"] = [{"cidrBlock": "0.0.0.0/1"}, {"cidrBlock": "128.0.0.0/1"}]


def _any_google_address(props: dict[str, Any]) -> None:
    props["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] = True


def _default_initial_pool(props: dict[str, Any]) -> None:
    del props["nodeConfig"]


@pytest.mark.parametrize(
    ("edit", "phrase"),
    [
        (public_nodes, "enablePrivateNodes must be true"),
        (_open_endpoint, "open to everyone"),
        (_internet_in_halves, "let in"),
        (_any_google_address, "any Google Cloud address"),
        (_default_initial_pool, "Compute Engine default account"),
    ],
    ids=["public-nodes", "open-endpoint", "internet-halves", "gcp-public-cidrs", "default-initial-pool"],
)
def test_a_cluster_that_breaks_a_promise_is_refused(edit: Callable[[dict[str, Any]], None], phrase: str) -> None:
    props = cluster()
    edit(props)
    messages = reported(GKE_PRIVATE_LEAST_PRIVILEGE, GKE_CLUSTER, props)
    assert any(phrase in message for message in messages), messages


def test_narrow_authorized_networks_pass() -> None:
    props = cluster()
    props["privateClusterConfig"]["enablePrivateEndpoint"] = False
    props["masterAuthorizedNetworksConfig"]["cidrBlocks"] = [{"cidrBlock": "203.0.113.0/24"}]
    assert reported(GKE_PRIVATE_LEAST_PRIVILEGE, GKE_CLUSTER, props) == []
