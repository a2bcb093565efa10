"""A shell in a compromised vLLM pod got root's capabilities, no seccomp filter and a writable image, and any
pod of the cluster could reach vLLM's unauthenticated /metrics and /tokenize: the red team's findings.

These tests read the manifests the shipped GKE stacks register (as the API server receives them) and assert
the hardened pod and the ingress NetworkPolicy; tests/kubernetes/test_manifest_schemas.py validates the same
objects against the pinned Kubernetes schema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.gke import manifests
from policy.kubernetes import check_network_policy_narrow, check_pod_hardened
from tests.conftest import render_stack, stack_config
from tests.kubernetes.manifests import kubernetes_manifests
from tests.policy.kubernetes_cases import fleet

STACKS = ["gke-l4x4", "gke-tpu-v6e"]
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _of_kind(stack: str, kind: str, overrides: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The fleet's own objects of a kind (the inference gateway's pickers and the metrics adapter are
    hardened too, tests/kubernetes/test_gateway_plan.py)."""
    capture = render_stack(stack, overrides) if overrides else render_stack(stack)
    fleet_name = f"gemma-{stack}-vllm"
    return [
        manifest
        for manifest in kubernetes_manifests(capture)
        if manifest.get("kind") == kind
        and manifest["metadata"]["name"].startswith(fleet_name)
        and "-epp" not in manifest["metadata"]["name"]
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_the_vllm_pod_is_hardened(stack: str) -> None:
    """No capability, no escalation, RuntimeDefault seccomp, read-only root, no service account token."""
    (deployment,) = _of_kind(stack, "Deployment")
    assert list(check_pod_hardened(DEPLOYMENT, deployment, {})) == []
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert (context["allowPrivilegeEscalation"], context["privileged"], context["readOnlyRootFilesystem"]) == (
        False,
        False,
        True,
    )
    # What a read-only root needs: HOME and /tmp are the pod's own emptyDirs.
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    for path in (manifests.HOME_DIR, manifests.TMP_DIR):
        assert "emptyDir" in volumes[mounts[path]]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["HOME"] == manifests.HOME_DIR


def test_a_gpu_pod_runs_as_the_weights_owner_not_root() -> None:
    """GPU pods run as the uid the FUSE mount gives the weights (the image defaults to root)."""
    (deployment,) = _of_kind("gke-l4x4", "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    volume = next(volume for volume in pod["volumes"] if volume["name"] == "models")
    options = volume["csi"]["volumeAttributes"]["mountOptions"].split(",")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert f"uid={pod['securityContext']['runAsUser']}" in options
    assert f"gid={pod['securityContext']['runAsGroup']}" in options
    assert pod["containers"][0]["securityContext"]["runAsNonRoot"] is True


def test_a_tpu_pod_keeps_the_image_user_and_says_why() -> None:
    """Non-root access to a GKE TPU node's devices is unconfirmed: TPU pods stay root, still capability-less."""
    (deployment,) = _of_kind("gke-tpu-v6e", "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert "runAsNonRoot" not in pod["securityContext"]
    assert manifests.runs_as_non_root(fleet()) is False  # the cases' fleet is a TPU shape
    assert "not confirmed" in (manifests.runs_as_non_root.__doc__ or "")


@pytest.mark.parametrize("stack", STACKS)
def test_only_the_scraper_and_the_load_balancers_sources_reach_vllm(stack: str) -> None:
    """Default deny for the vLLM pods: one ingress rule, on the vLLM port only, from GMP's collectors, the
    gateway's proxy-only subnet, the pickers and Google's health checkers; not the private ranges at large
    (all of 10/8, 172.16/12 and 192.168/16 were admitted), never a public range."""
    (policy,) = _of_kind(stack, "NetworkPolicy")
    (deployment,) = _of_kind(stack, "Deployment")
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["podSelector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    (rule,) = spec["ingress"]
    port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert rule["ports"] == [{"protocol": "TCP", "port": port}]
    scraper = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "collector"}},
    }
    assert scraper in rule["from"]
    blocks = [peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer]
    assert blocks == ["192.168.254.0/23", *manifests.HEALTH_CHECK_RANGES]
    assert list(check_network_policy_narrow("", policy, {})) == []


def test_a_public_service_admits_its_named_ranges_only() -> None:
    """A public endpoint's allowed ranges are the only public sources the NetworkPolicy adds."""
    gke = json.loads(stack_config("gke-l4x4").values["gemma-serving:gke"])
    gke["service"] = {"publicEndpoint": True, "allowedSourceRanges": ["203.0.113.0/24"]}
    (policy,) = _of_kind("gke-l4x4", "NetworkPolicy", {"gemma-serving:gke": json.dumps(gke)})
    cidrs = [peer["ipBlock"]["cidr"] for peer in policy["spec"]["ingress"][0]["from"] if "ipBlock" in peer]
    assert cidrs == ["192.168.254.0/23", "203.0.113.0/24", *manifests.HEALTH_CHECK_RANGES]


def test_the_endpoint_picker_is_admitted_by_its_label_behind_the_gateway() -> None:
    """The picker scrapes each pod's metrics: the hook admits its pods (by their `app` label, the picker's
    name: components/gke/gateway_manifests.py) and nothing wider; a gated fleet admits both tracks' pickers."""
    gke = json.loads(stack_config("gke-l4x4").values["gemma-serving:gke"])
    gke["rollout"] = {"gated": True}
    (policy,) = _of_kind("gke-l4x4", "NetworkPolicy", {"gemma-serving:gke": json.dumps(gke)})
    pickers = [peer for peer in policy["spec"]["ingress"][0]["from"] if "-epp" in json.dumps(peer)]
    assert pickers == [
        {"podSelector": {"matchLabels": {"app": "gemma-gke-l4x4-vllm-blue-epp"}}},
        {"podSelector": {"matchLabels": {"app": "gemma-gke-l4x4-vllm-green-epp"}}},
    ]
