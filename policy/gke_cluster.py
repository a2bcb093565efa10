"""A GKE cluster and its node pools are private and run as a least-privilege node account.

Why a pack rule beside the component's defaults: the red team found the system pool running as the Compute
Engine default account (often Editor: every pod on the node could act as the project through the metadata
server) on a cluster with a public control plane and public node IPs. A later refactor, or a pool written by
hand into the program, must not bring that back. The rules, for every `gcp:container` Cluster and NodePool:

- every node config names a service account, and not the Compute Engine default one;
- every node is a Shielded VM with secure boot;
- the cluster's nodes are private (no external IP), and a pool does not turn that off;
- the control plane's public IP endpoint is off, or open only to authorized networks that together are not
  the internet; "any Google Cloud address" (`gcpPublicCidrsAccessEnabled`) is never authorized.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, mappings
from policy.source_ranges import describe, too_wide

GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
# `<project-number>-compute@developer.gserviceaccount.com`, or "default", GKE's word for it.
_DEFAULT_ACCOUNT = re.compile(r"^(default|\d+-compute@developer\.gserviceaccount\.com)$", re.IGNORECASE)


def _node_config_problems(where: str, config: Any) -> Iterator[str]:  # noqa: ANN401 - a property value
    account = field(config, "serviceAccount")
    if not isinstance(account, str) or not account.strip():
        yield f"{where}.serviceAccount is unset: the nodes would run as the Compute Engine default account"
    elif _DEFAULT_ACCOUNT.match(account.strip()):
        yield f"{where}.serviceAccount {account!r} is the Compute Engine default account; use the node account"
    if field(config, "shieldedInstanceConfig", "enableSecureBoot") is not True:
        yield f"{where}.shieldedInstanceConfig.enableSecureBoot must be true (Shielded nodes)"


def _control_plane_problems(props: Mapping[str, Any]) -> Iterator[str]:
    if field(props, "privateClusterConfig", "enablePrivateNodes") is not True:
        yield "privateClusterConfig.enablePrivateNodes must be true: nodes without external IPs"
    networks = field(props, "masterAuthorizedNetworksConfig")
    if field(networks, "gcpPublicCidrsAccessEnabled") is True:
        yield "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled authorizes any Google Cloud address"
    if field(props, "privateClusterConfig", "enablePrivateEndpoint") is True:
        return
    blocks = [
        block for item in mappings(field(networks, "cidrBlocks")) if isinstance(block := field(item, "cidrBlock"), str)
    ]
    if networks is None or not blocks:
        yield (
            "the control plane's public IP endpoint is open to everyone: set privateClusterConfig."
            "enablePrivateEndpoint (reach it through the DNS endpoint) or name masterAuthorizedNetworksConfig ranges"
        )
    elif wide := too_wide(blocks):
        yield f"masterAuthorizedNetworksConfig {blocks} together let in {'; '.join(describe(i) for i in wide)}"


def check_gke_private_least_privilege(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type == GKE_NODE_POOL:
        yield from _node_config_problems("nodeConfig", field(props, "nodeConfig"))
        if field(props, "networkConfig", "enablePrivateNodes") is False:
            yield "networkConfig.enablePrivateNodes: false gives this pool's nodes external IPs"
        return
    yield from _control_plane_problems(props)
    # The pool GKE makes at creation runs as nodeConfig's account until it is removed.
    yield from _node_config_problems("nodeConfig", field(props, "nodeConfig"))


GKE_PRIVATE_LEAST_PRIVILEGE = Guardrail(
    name="gke-private-least-privilege",
    description=(
        "GKE nodes run as a named, non-default account on Shielded VMs without external IPs; the control plane's "
        "public endpoint is off or open to narrow authorized networks only."
    ),
    resource_types=frozenset({GKE_CLUSTER, GKE_NODE_POOL}),
    check=check_gke_private_least_privilege,
)
