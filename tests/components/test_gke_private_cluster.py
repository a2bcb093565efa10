"""A created GKE cluster is private by default and its nodes run as their own least-privilege account.

The red team found the system node pool running as the Compute Engine default service account with the
cloud-platform scope (often roles/editor: every pod on the node could act as the project), a control plane
open to the internet and nodes with external IPs. Each test renders a shipped GKE stack (or one changed the
way an attacker would want) and asserts the safe plan.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.gke.node_pool import NODE_ROLES
from preview.capture import Capture
from tests.conftest import render_stack, stack_config

STACKS = ["gke-l4x4", "gke-tpu-v6e"]
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


def _one(capture: Capture, type_: str) -> dict[str, Any]:
    found = [resource.inputs for resource in capture.resources if resource.type == type_]
    assert len(found) == 1, [resource.name for resource in capture.resources if resource.type == type_]
    return found[0]


def _node_account(capture: Capture) -> str:
    accounts = [
        resource.inputs["accountId"]
        for resource in capture.resources
        if resource.type == "gcp:serviceaccount/account:Account" and resource.name.endswith("-nodes-account-sa")
    ]
    assert len(accounts) == 1
    return str(accounts[0])


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_runs_as_the_stacks_node_account(stack: str) -> None:
    """No node (the system pool included, and the default pool GKE makes at creation) may run as the
    Compute Engine default account: each names the stack's node account explicitly."""
    capture = render_stack(stack)
    account = _node_account(capture)
    configs = [_one(capture, CLUSTER)["nodeConfig"]] + [
        resource.inputs["nodeConfig"] for resource in capture.resources if resource.type == NODE_POOL
    ]
    assert len(configs) == 3  # the cluster's initial pool, the system pool, the accelerators
    for config in configs:
        email = str(config.get("serviceAccount", ""))
        assert email.startswith(f"{account}@"), config
        assert "compute@developer" not in email


@pytest.mark.parametrize("stack", STACKS)
def test_the_node_account_holds_only_the_node_role(stack: str) -> None:
    """The node account's project grants are GKE's minimum node role, never editor or a storage role."""
    capture = render_stack(stack)
    account = _node_account(capture)
    roles = sorted(
        resource.inputs["role"]
        for resource in capture.resources
        if resource.type == "gcp:projects/iAMMember:IAMMember" and account in str(resource.inputs.get("member"))
    )
    assert roles == sorted(NODE_ROLES) == ["roles/container.defaultNodeServiceAccount"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_is_a_shielded_vm(stack: str) -> None:
    """A node without secure boot could run a tampered boot chain unnoticed."""
    capture = render_stack(stack)
    pools = [resource.inputs for resource in capture.resources if resource.type == NODE_POOL]
    for config in [_one(capture, CLUSTER)["nodeConfig"], *(pool["nodeConfig"] for pool in pools)]:
        assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    assert _one(capture, CLUSTER)["enableShieldedNodes"] is True


@pytest.mark.parametrize("stack", STACKS)
def test_the_cluster_is_private_by_default(stack: str) -> None:
    """Nodes get no external IP; the public IP endpoint is off and no network, not even "any Google Cloud
    address", is authorized; Pulumi reaches the API through the IAM-guarded DNS endpoint."""
    cluster = _one(render_stack(stack), CLUSTER)
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    networks = cluster["masterAuthorizedNetworksConfig"]
    assert networks.get("cidrBlocks", []) == []
    assert networks["gcpPublicCidrsAccessEnabled"] is False
    assert cluster["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    # NetworkPolicy needs an enforcer: Dataplane V2.
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"


@pytest.mark.parametrize("stack", STACKS)
def test_private_nodes_get_cloud_nat_egress(stack: str) -> None:
    """Private nodes must still pull images from outside Google and reach Hugging Face: Cloud NAT."""
    capture = render_stack(stack)
    cluster = _one(capture, CLUSTER)
    router = _one(capture, "gcp:compute/router:Router")
    nat = _one(capture, "gcp:compute/routerNat:RouterNat")
    assert router["network"] == cluster["network"]
    assert router["region"] == nat["region"] == cluster["location"]
    assert nat["natIpAllocateOption"] == "AUTO_ONLY"


def test_the_provider_talks_to_the_dns_endpoint_without_a_token() -> None:
    """The kubeconfig in the state holds no credential and no IP endpoint that may be closed."""
    capture = render_stack("gke-l4x4")
    provider = _one(capture, "pulumi:providers:kubernetes")
    kubeconfig = str(provider["kubeconfig"])
    assert "gke-gcloud-auth-plugin" in kubeconfig
    assert "token:" not in kubeconfig
    assert "certificate-authority-data" not in kubeconfig


def _with_control_plane(stack: str, control_plane: dict[str, Any]) -> Capture:
    gke = json.loads(stack_config(stack).values["gemma-serving:gke"])
    gke.setdefault("cluster", {})["controlPlane"] = control_plane
    return render_stack(stack, {"gemma-serving:gke": json.dumps(gke)})


def test_named_networks_open_the_public_endpoint_to_them_only() -> None:
    """The setting that opens the control plane opens it to the named ranges, and to nothing else."""
    capture = _with_control_plane("gke-l4x4", {"publicEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]})
    cluster = _one(capture, CLUSTER)
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    blocks = cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"]
    assert [block["cidrBlock"] for block in blocks] == ["203.0.113.0/24"]
    assert cluster["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False


def test_cloud_nat_can_be_left_to_a_network_that_has_one() -> None:
    """Two NATs cannot cover one subnet: `cloudNat: false` plans none, and the nodes stay private."""
    gke = json.loads(stack_config("gke-l4x4").values["gemma-serving:gke"])
    gke.setdefault("cluster", {})["cloudNat"] = False
    capture = render_stack("gke-l4x4", {"gemma-serving:gke": json.dumps(gke)})
    assert not [r for r in capture.resources if r.type.startswith("gcp:compute/router")]
    assert _one(capture, CLUSTER)["privateClusterConfig"]["enablePrivateNodes"] is True
