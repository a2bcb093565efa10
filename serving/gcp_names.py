"""Google Cloud's naming rules that several components check their inputs against, each stated once.

Why one place: a service-account id or a resource id follows the same rule wherever a component makes
one; copies of a pattern in every module drift apart, and then one component accepts a name that
another (or Google) refuses.
"""

from __future__ import annotations

import re

# Service account ids: 6-30 lowercase letters, digits and '-', starting with a letter, not ending with '-'
# (https://cloud.google.com/iam/docs/service-accounts-create).
SERVICE_ACCOUNT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
# RFC 1035 labels, the rule for Artifact Registry repository ids, Cloud Run job names and TPU node and
# queued-resource ids: 1-63 lowercase letters, digits and '-', starting with a letter, not ending with '-'.
RFC1035_ID = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# Our keys for IAM bindings given as a map (e.g. a bucket's readers): they become part of the binding's
# child name, so that reordering the map never replaces a binding.
BINDING_KEY = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
# A relative object path inside a bucket (a model directory, an import prefix): letters, digits, '.',
# '_' and '-' per segment, no leading or trailing '/'. Segments of '..' are refused by `bucket_path_problem`.
BUCKET_PATH = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
# A full git commit id, the only pin of a Hugging Face revision that cannot move (branches and tags can).
COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
# Secret Manager secret ids: 1-255 letters, digits, '-' and '_' (https://cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets/create).
SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
# Bucket names without dots: 3-63 lowercase letters, digits, '-' and '_', starting and ending with a letter or
# digit, not starting with "goog" (https://cloud.google.com/storage/docs/buckets#naming). Names with dots
# need domain verification, so they are not offered here.
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$")


def bucket_path_problem(path: str, *, bucket: str = "the model bucket", example: str = "gemma-4-12B-it") -> str | None:
    """Why `path` is not a relative object path inside ``bucket``, or None when it is."""
    if not BUCKET_PATH.match(path) or ".." in path.split("/"):
        return (
            f"{path!r} must be a relative object path inside {bucket} (segments of letters, digits, '.', '_' "
            f"or '-' joined by '/', none of them '..'), e.g. {example}"
        )
    return None


def bucket_name_problem(name: str) -> str | None:
    """Why `name` cannot be a Cloud Storage bucket's name, or None when it can."""
    if not BUCKET_NAME.match(name) or name.startswith("goog") or "google" in name:
        return (
            f"{name!r} is not a bucket name: 3-63 lowercase letters, digits, '-' and '_', starting and ending with "
            "a letter or digit, not starting with 'goog' nor containing 'google' (names are global: prefix your "
            "project id, e.g. my-project-gemma-models)"
        )
    return None


def region_of(zone: str) -> str:
    """The region a zone belongs to (`us-east5-a` -> `us-east5`): Google's zone names are `<region>-<letter>`."""
    return zone.rsplit("-", 1)[0]


# A VPC network or subnetwork as a name (RFC 1035: lowercase, digits, '-', at most 63) or a full
# projects/<p>/(global|regions/<r>)/<networks|subnetworks>/<name> path
# (https://cloud.google.com/compute/docs/naming-resources). `Default` is not the `default` network.
VPC_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$|^projects/[^/]+/(global|regions/[^/]+)/[a-z]+/[^/]+$")

# Namespaces Kubernetes and GKE keep for themselves: serving there mixes the stack's pods, service account and
# secrets with the cluster's own (kube-system's controllers, Managed Prometheus' collectors), and a NetworkPolicy
# or a `pulumi destroy` there reaches them. Sources: Kubernetes "Namespaces" (default, kube-system, kube-public,
# kube-node-lease: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/); GKE's own
# (gke-gmp-system, gmp-system, gmp-public for Managed Prometheus; gke-managed-* for managed add-ons;
# config-management-system, gatekeeper-system, istio-system, asm-system, cnrm-system for Config Sync, Policy
# Controller, service mesh and Config Connector).
SYSTEM_NAMESPACES = frozenset(
    {"default", "config-management-system", "gatekeeper-system", "istio-system", "asm-system", "cnrm-system"}
)
SYSTEM_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-", "anthos-", "config-management-")


def is_system_namespace(name: str) -> bool:
    return name in SYSTEM_NAMESPACES or name.startswith(SYSTEM_NAMESPACE_PREFIXES)
