"""The Custom Metrics Stackdriver Adapter: what lets the HPA read Managed Prometheus metrics, installed by
the program with its Google account and grants, before any HPA exists.

Why this adapter and not GKE's built-in custom metrics (`AutoscalingMetric`, autoscaling.gke.io/v1beta1):
that mechanism is Preview, needs GKE 1.35.1-gke.1396000 or later on the Rapid channel and the HPA
performance profile (docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling),
and the stacks pin 1.34/1.35 on Regular; Google's Managed Prometheus HPA page and its inference-gateway
autoscaling guide use this adapter for every other cluster. Why vendored: Google's instructions
`kubectl apply` the manifest from the repository's `master` branch, which changes under a running cluster;
the copy here is one commit's file, its sha256 checked at construction (components/gke/vendor/SOURCE.md).

The program changes two things of the vendored file when it applies it: the KSA's Workload Identity
annotation, and a hardened Deployment (`hardened`, below). Owns: the adapter's objects (namespace
`custom-metrics`, its KSA, RBAC, Deployment, Service and the three APIServices), its Google account with
`roles/monitoring.viewer` on the project, and the Workload Identity binding that lets the KSA act as that
account. `ready` is what an HPA waits for.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.gke import objects
from components.gke.manifests import WORKLOAD_IDENTITY_ANNOTATION
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.wire import gcp
from serving.image_digests import pinned_reference
from serving.naming import TypeToken

MANIFEST = Path(__file__).resolve().parent / "vendor" / "custom-metrics-stackdriver-adapter.yaml"
# GoogleCloudPlatform/k8s-stackdriver, custom-metrics-stackdriver-adapter/deploy/production/
# adapter_new_resource_model.yaml at commit af49d863755c0535f598cfde9288ae9a75251d38 (image v0.16.9-gke.0).
MANIFEST_SHA256 = "093e3d6269013603ecc9d7f90c571b929b4fa8e63ccf135c036e243d708e75f5"
NAMESPACE = "custom-metrics"
ACCOUNT = "custom-metrics-stackdriver-adapter"
# Reading time series is all the adapter does with Google's APIs (Managed Prometheus HPA guide).
READER_ROLE = "roles/monitoring.viewer"
ACCOUNT_DESCRIPTION = (
    "The Custom Metrics Stackdriver Adapter of a gemma-serving GKE fleet: reads Cloud Monitoring time series "
    "(the HPA's metrics), nothing else."
)


class VendoredManifestChangedError(ValueError):
    """The vendored manifest is not the file SOURCE.md names: refuse to deploy an unreviewed change."""


def adapter_manifests(path: Path = MANIFEST, sha256: str = MANIFEST_SHA256) -> list[dict[str, Any]]:
    """The vendored objects, in the file's order, after checking the file is the pinned one."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise VendoredManifestChangedError(
            f"{path.name}: sha256 {digest} is not the pinned {sha256}; update components/gke/vendor/SOURCE.md "
            "and MANIFEST_SHA256 together when moving to a newer adapter release"
        )
    # libyaml's parser where PyYAML has it (the same documents, some 20x faster than the pure-Python one).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [document for document in yaml.load_all(data, Loader=loader) if document]


def with_identity(manifest: dict[str, Any], email: pulumi.Input[str]) -> dict[str, Any]:
    """The adapter's KSA annotated with the Google account it acts as (Workload Identity)."""
    if manifest["kind"] != "ServiceAccount":
        return manifest
    metadata = dict(manifest["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), WORKLOAD_IDENTITY_ANNOTATION: email}
    return {**manifest, "metadata": metadata}


# Upstream's Deployment runs as the image's root user on port 443 with a writable root (distroless/static).
# Hardened here, each change a flag or field of the adapter's own API server (sigs.k8s.io/custom-metrics-
# apiserver's secure-serving options): a non-root user (distroless's `nonroot`, 65532) needs no capability
# to listen on 6443 instead of 443 (the Service keeps port 443 and targets 6443), and the self-signed serving
# certificate goes to an emptyDir instead of the read-only root. Not run on a cluster here: a first `pulumi up`
# shows whether the adapter's readiness probe passes (`verify status` reads the HPA's conditions).
SECURE_PORT = 6443
CERT_DIR = "/var/run/serving-cert"
NONROOT_UID = 65532


def hardened(manifest: dict[str, Any]) -> dict[str, Any]:
    """The adapter's Deployment without root, capabilities or a writable root; its Service on the new port."""
    if manifest["kind"] == "Service":
        spec = {
            **manifest["spec"],
            "ports": [{**port, "targetPort": SECURE_PORT} for port in manifest["spec"]["ports"]],
        }
        return {**manifest, "spec": spec}
    if manifest["kind"] != "Deployment":
        return manifest
    template = manifest["spec"]["template"]
    containers = []
    for container in template["spec"]["containers"]:
        probe = container.get("readinessProbe")
        containers.append(
            {
                **container,
                # By digest where serving/data/image-digests.json records the vendored tag's (none yet: the tag).
                "image": pinned_reference(container["image"]),
                "command": [*container["command"], f"--secure-port={SECURE_PORT}", f"--cert-dir={CERT_DIR}"],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "privileged": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumeMounts": [*container.get("volumeMounts", []), {"name": "serving-cert", "mountPath": CERT_DIR}],
                **(
                    {"readinessProbe": {**probe, "httpGet": {**probe["httpGet"], "port": SECURE_PORT}}} if probe else {}
                ),
            }
        )
    pod = {
        **template["spec"],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": containers,
        "volumes": [*template["spec"].get("volumes", []), {"name": "serving-cert", "emptyDir": {"sizeLimit": "16Mi"}}],
    }
    spec = {**manifest["spec"], "template": {**template, "spec": pod}}
    return {**manifest, "spec": spec}


def _resource_name(name: str, manifest: dict[str, Any]) -> str:
    namespace = manifest["metadata"].get("namespace")
    where = f"{namespace}-" if namespace else ""
    return f"{name}-{manifest['kind'].lower()}-{where}{manifest['metadata']['name']}".replace(":", "-")


@dataclass(frozen=True)
class MetricsAdapterArgs:
    project: str
    # The adapter's Google account id (`gemma-<stack>-metrics`).
    account_id: str
    display_name: str

    def __post_init__(self) -> None:
        if not self.project:
            raise ValueError("MetricsAdapterArgs.project is required")


class MetricsAdapter(pulumi.ComponentResource):
    """Owns the adapter's Kubernetes objects, its Google account and grants; the cluster is the caller's."""

    # What an HPA waits for: the APIServices, the serving Deployment and the account's grants.
    ready: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        args: MetricsAdapterArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TypeToken.GKE_METRICS_ADAPTER, name, None, opts)
        manifests = adapter_manifests()
        child = pulumi.ResourceOptions(parent=self)
        account = ServingIdentity(
            f"{name}-account",
            ServingIdentityArgs(
                account_id=args.account_id, display_name=args.display_name, description=ACCOUNT_DESCRIPTION
            ),
            child,
        )
        viewer = gcp.ProjectIamMember(
            f"{name}-monitoring-viewer", project=args.project, role=READER_ROLE, member=account.member, opts=child
        )
        binding = gcp.ServiceAccountIamMember(
            f"{name}-workload-identity",
            service_account_id=account.email.apply(lambda email: f"projects/{args.project}/serviceAccounts/{email}"),
            role="roles/iam.workloadIdentityUser",
            member=f"serviceAccount:{args.project}.svc.id.goog[{NAMESPACE}/{ACCOUNT}]",
            opts=child,
        )
        on_cluster = pulumi.ResourceOptions(parent=self, provider=provider)
        namespace = next(m for m in manifests if m["kind"] == "Namespace")
        created_namespace = objects.register(_resource_name(name, namespace), namespace, on_cluster)
        in_namespace = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[created_namespace])
        after_grants = pulumi.ResourceOptions(
            parent=self, provider=provider, depends_on=[created_namespace, viewer, binding]
        )
        self.ready = [viewer, binding]
        for manifest in manifests:
            if manifest is namespace:
                continue
            kind = manifest["kind"]
            resource = objects.register(
                _resource_name(name, manifest),
                hardened(with_identity(manifest, account.email)),
                after_grants if kind == "Deployment" else in_namespace,
            )
            if kind in {"Deployment", "APIService"}:
                self.ready.append(resource)
        self.register_outputs({})
