"""Crafted Kubernetes objects for the GKE guardrails (policy/kubernetes.py): the program's own manifests
(components/gke/manifests.py) pass, and each way to break a promise is refused with a message that says
what to change. tests/policy/test_rules.py runs them with every other guardrail's cases."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from components.gke import manifests
from components.gke.manifests import FleetSpec
from policy.guardrail import Guardrail
from policy.kubernetes import (
    GKE_IMAGES_PINNED,
    GKE_MODEL_MOUNT,
    GKE_NETWORK_POLICY_NARROW,
    GKE_NO_CREDENTIALS,
    GKE_POD_HARDENED,
    GKE_PROBES,
    GKE_SERVICE_NOT_PUBLIC,
    K8S_NETWORK_POLICY,
    K8S_SECRET,
    K8S_SERVICE,
)
from serving.route_guard import GuardConfig, guard_args, launcher_command
from serving.shapes import resolved

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
# (id, guardrail, resource type, build, expected phrase for a bad case)
K8sCase = tuple[str, Guardrail, str, Callable[[], dict[str, Any]], str | None]


def fleet(**changes: Any) -> FleetSpec:
    values: dict[str, Any] = {
        "name": "gemma-x-vllm",
        "namespace": "gemma",
        "image": "us-east5-docker.pkg.dev/p/gemma-x-dockerhub/vllm/vllm-tpu:v0.32.0",
        "serve_args": ["/mnt/models/m", "--port", "8000", *guard_args()],
        "serving_command": launcher_command(GuardConfig(names=("m",), key="required", scrapers="network")),
        "client_ranges": ["192.168.254.0/23"],
        "port": 8000,
        "shape": resolved("ct6e-standard-1t"),
        "cpu": 8.0,
        "memory_gib": 64.0,
        "bucket": "gemma-x-models",
        "mount_path": "/mnt/models",
        "mount_options": ["uid=1001", "gid=1001", "implicit-dirs"],
        "service_account_email": "gemma-x-vllm@p.iam.gserviceaccount.com",
        "api_key_version": "projects/p/secrets/k/versions/1",
        "min_replicas": 1,
        "max_replicas": 4,
        "parked": False,
        "target_waiting_per_pod": 5,
        "scale_down_stabilization_seconds": 600,
        "model_load_seconds": 1800,
    }
    return FleetSpec(**{**values, **changes})


def _deployment() -> dict[str, Any]:
    return copy.deepcopy(manifests.deployment(fleet()))


def _container(props: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = props["spec"]["template"]["spec"]["containers"][0]
    return container


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        props = _deployment()
        edit(props)
        return props

    return build


def _unpinned(props: dict[str, Any]) -> None:
    _container(props)["image"] = "vllm/vllm-tpu:latest"


def _no_uid(props: dict[str, Any]) -> None:
    props["spec"]["template"]["spec"]["volumes"][0]["csi"]["volumeAttributes"]["mountOptions"] = "implicit-dirs"


def _writable(props: dict[str, Any]) -> None:
    props["spec"]["template"]["spec"]["volumes"][0]["csi"]["readOnly"] = False


def _no_startup_probe(props: dict[str, Any]) -> None:
    del _container(props)["startupProbe"]


def _plain_key(props: dict[str, Any]) -> None:
    _container(props)["env"] = [{"name": "VLLM_API_KEY", "value": "abc123"}]


def _key_argument(props: dict[str, Any]) -> None:
    _container(props)["args"] = [*_container(props)["args"], "--api-key", "abc123"]


def _security(props: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = _container(props)["securityContext"]
    return context


def _privileged(props: dict[str, Any]) -> None:
    _security(props)["privileged"] = True


def _escalates(props: dict[str, Any]) -> None:
    del _security(props)["allowPrivilegeEscalation"]


def _keeps_capabilities(props: dict[str, Any]) -> None:
    del _security(props)["capabilities"]


def _adds_sys_admin(props: dict[str, Any]) -> None:
    _security(props)["capabilities"] = {"drop": ["ALL"], "add": ["SYS_ADMIN"]}


def _unconfined(props: dict[str, Any]) -> None:
    _security(props)["seccompProfile"] = {"type": "Unconfined"}
    props["spec"]["template"]["spec"]["securityContext"]["seccompProfile"] = {"type": "Unconfined"}


def _writable_root(props: dict[str, Any]) -> None:
    _security(props)["readOnlyRootFilesystem"] = False


def _host_network(props: dict[str, Any]) -> None:
    props["spec"]["template"]["spec"]["hostNetwork"] = True


def _network_policy(edit: Callable[[dict[str, Any]], None] | None = None) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        policy = manifests.network_policy(fleet())
        if edit is not None:
            edit(policy)
        return policy

    return build


def _internet_in_halves(policy: dict[str, Any]) -> None:
    policy["spec"]["ingress"][0]["from"] += [{"ipBlock": {"cidr": "0.0.0.0/1"}}, {"ipBlock": {"cidr": "128.0.0.0/1"}}]


def _from_anyone(policy: dict[str, Any]) -> None:
    del policy["spec"]["ingress"][0]["from"]


def _public_service() -> dict[str, Any]:
    service = manifests.service(fleet())
    service["metadata"]["annotations"] = {}
    return service


def _public_ranges(ranges: list[str]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        return manifests.service(fleet(public_endpoint=True, allowed_source_ranges=ranges))

    return build


def _secret_with_data() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}, "stringData": {"key": "x"}}


K8S_GOOD: list[K8sCase] = [
    ("internal-service", GKE_SERVICE_NOT_PUBLIC, K8S_SERVICE, lambda: manifests.service(fleet()), None),
    ("narrow-public-service", GKE_SERVICE_NOT_PUBLIC, K8S_SERVICE, _public_ranges(["203.0.113.0/24"]), None),
    ("pinned-image", GKE_IMAGES_PINNED, DEPLOYMENT, _deployment, None),
    ("fuse-uid-gid", GKE_MODEL_MOUNT, DEPLOYMENT, _deployment, None),
    ("three-probes", GKE_PROBES, DEPLOYMENT, _deployment, None),
    ("key-from-file", GKE_NO_CREDENTIALS, DEPLOYMENT, _deployment, None),
    ("hardened-pod", GKE_POD_HARDENED, DEPLOYMENT, _deployment, None),
    (
        "gpu-pod-hardened",
        GKE_POD_HARDENED,
        DEPLOYMENT,
        lambda: manifests.deployment(fleet(shape=resolved("g2-standard-48"))),
        None,
    ),
    ("fleet-network-policy", GKE_NETWORK_POLICY_NARROW, K8S_NETWORK_POLICY, _network_policy(), None),
]
K8S_BAD: list[K8sCase] = [
    ("external-service", GKE_SERVICE_NOT_PUBLIC, K8S_SERVICE, _public_service, "open to everyone"),
    ("halves-of-internet", GKE_SERVICE_NOT_PUBLIC, K8S_SERVICE, _public_ranges(["0.0.0.0/1", "128.0.0.0/1"]), "let in"),
    ("latest-tag", GKE_IMAGES_PINNED, DEPLOYMENT, _edited(_unpinned), "containers[0].image"),
    ("fuse-without-uid", GKE_MODEL_MOUNT, DEPLOYMENT, _edited(_no_uid), "uid and gid"),
    ("fuse-writable", GKE_MODEL_MOUNT, DEPLOYMENT, _edited(_writable), "readOnly"),
    ("no-startup-probe", GKE_PROBES, DEPLOYMENT, _edited(_no_startup_probe), "startupProbe"),
    ("plain-env-key", GKE_NO_CREDENTIALS, DEPLOYMENT, _edited(_plain_key), "VLLM_API_KEY"),
    ("api-key-argument", GKE_NO_CREDENTIALS, DEPLOYMENT, _edited(_key_argument), "--api-key"),
    ("secret-with-data", GKE_NO_CREDENTIALS, K8S_SECRET, _secret_with_data, "Kubernetes Secret"),
    ("privileged", GKE_POD_HARDENED, DEPLOYMENT, _edited(_privileged), "privileged: true"),
    ("may-escalate", GKE_POD_HARDENED, DEPLOYMENT, _edited(_escalates), "allowPrivilegeEscalation"),
    ("keeps-capabilities", GKE_POD_HARDENED, DEPLOYMENT, _edited(_keeps_capabilities), "drop must list ALL"),
    ("adds-sys-admin", GKE_POD_HARDENED, DEPLOYMENT, _edited(_adds_sys_admin), "SYS_ADMIN"),
    ("seccomp-unconfined", GKE_POD_HARDENED, DEPLOYMENT, _edited(_unconfined), "Unconfined"),
    ("writable-root", GKE_POD_HARDENED, DEPLOYMENT, _edited(_writable_root), "readOnlyRootFilesystem"),
    ("host-network", GKE_POD_HARDENED, DEPLOYMENT, _edited(_host_network), "hostNetwork"),
    (
        "policy-internet-halves",
        GKE_NETWORK_POLICY_NARROW,
        K8S_NETWORK_POLICY,
        _network_policy(_internet_in_halves),
        "let in",
    ),
    (
        "policy-from-anyone",
        GKE_NETWORK_POLICY_NARROW,
        K8S_NETWORK_POLICY,
        _network_policy(_from_anyone),
        "every source",
    ),
]
