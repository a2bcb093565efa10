"""The rule "the serving identity writes only compile-cache/" judges the effective grant.

The red team got write access for the serving identity past the rule by granting a storage role at project
level (every bucket inherits it) and by naming the identity in another form: a GKE pod's Workload Identity
`principal://`, a `principalSet://` of its pool or namespace, a group, a domain, allUsers or
allAuthenticatedUsers. With write access the server could replace the weights every later start loads, or
poison the compile cache. Each attack below goes through pulumi-policy's own callback, as the pack runs it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy.storage_writes import SERVING_WRITES_ONLY_THE_CACHE
from tests.policy.props import reported

VLLM_SA = "serviceAccount:gemma-l4-vllm@p.iam.gserviceaccount.com"
IMPORTER = "serviceAccount:gemma-l4-import@p.iam.gserviceaccount.com"
POOL = "iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/p.svc.id.goog"
KSA_PRINCIPAL = f"principal://{POOL}/subject/ns/gemma/sa/gemma-l4-vllm"
NAMESPACE_SET = f"principalSet://{POOL}/namespace/gemma"
SET_MEMBERS = [
    NAMESPACE_SET,
    "group:ml-serving@example.com",
    "domain:example.com",
    "allUsers",
    "allAuthenticatedUsers",
    "projectEditor:p",
]

PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
PROJECT_BINDING = "gcp:projects/iAMBinding:IAMBinding"
PROJECT_POLICY = "gcp:projects/iAMPolicy:IAMPolicy"
FOLDER_LEVEL_MEMBER = "gcp:folder/iAMMember:IAMMember"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
MANAGED_FOLDER_MEMBER = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"


def _check(resource_type: str, props: dict[str, Any]) -> list[str]:
    return reported(SERVING_WRITES_ONLY_THE_CACHE, resource_type, props)


@pytest.mark.parametrize("role", ["roles/storage.objectUser", "roles/storage.admin", "roles/editor", "roles/owner"])
def test_a_project_level_write_role_for_the_serving_identity_is_refused(role: str) -> None:
    """A project grant reaches the model bucket: the rule must see it, not only bucket grants."""
    [message] = _check(PROJECT_MEMBER, {"project": "p", "role": role, "member": VLLM_SA})
    assert "the project (every bucket in it)" in message
    assert "serving identity" in message


def test_a_custom_role_at_project_level_is_treated_as_writing() -> None:
    """The plan cannot show a custom role's permissions: refused rather than trusted."""
    assert _check(PROJECT_MEMBER, {"project": "p", "role": "projects/p/roles/blobWriter", "member": VLLM_SA})


def test_project_bindings_and_policies_are_judged_too() -> None:
    assert _check(
        PROJECT_BINDING, {"project": "p", "role": "roles/storage.objectAdmin", "members": [IMPORTER, VLLM_SA]}
    )
    policy = {"bindings": [{"role": "roles/storage.objectCreator", "members": [KSA_PRINCIPAL]}]}
    assert _check(PROJECT_POLICY, {"project": "p", "policyData": json.dumps(policy)})


def test_a_folder_level_grant_is_judged_like_a_project_one() -> None:
    [message] = _check(FOLDER_LEVEL_MEMBER, {"folder": "folders/1", "role": "roles/storage.admin", "member": VLLM_SA})
    assert "every project under it" in message


def test_the_gke_pods_principal_may_not_write_the_bucket() -> None:
    """The serving identity on GKE granted directly (Workload Identity principal://): same rule."""
    assert _check(BUCKET_MEMBER, {"bucket": "b", "role": "roles/storage.objectUser", "member": KSA_PRINCIPAL})


def test_the_gke_pods_principal_may_write_the_cache_folder() -> None:
    props = {"bucket": "b", "managedFolder": "compile-cache/", "role": "roles/storage.objectUser"}
    assert _check(MANAGED_FOLDER_MEMBER, {**props, "member": KSA_PRINCIPAL}) == []


@pytest.mark.parametrize("member", SET_MEMBERS)
def test_a_set_that_may_hold_the_serving_identity_writes_nothing(member: str) -> None:
    """Bucket, project, and even the cache folder: a writer nobody can list could poison the next start."""
    assert _check(BUCKET_MEMBER, {"bucket": "b", "role": "roles/storage.objectCreator", "member": member})
    assert _check(PROJECT_MEMBER, {"project": "p", "role": "roles/storage.objectAdmin", "member": member})
    folder = {"bucket": "b", "managedFolder": "compile-cache/", "role": "roles/storage.objectUser", "member": member}
    [message] = _check(MANAGED_FOLDER_MEMBER, folder)
    assert "a set of identities" in message


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        # The node and serving accounts' ordinary project roles: not storage writes.
        (PROJECT_MEMBER, {"project": "p", "role": "roles/logging.logWriter", "member": VLLM_SA}),
        (PROJECT_MEMBER, {"project": "p", "role": "roles/container.defaultNodeServiceAccount", "member": VLLM_SA}),
        # Reading is the server's job, at any level and for a set too.
        (PROJECT_MEMBER, {"project": "p", "role": "roles/storage.objectViewer", "member": VLLM_SA}),
        (BUCKET_MEMBER, {"bucket": "b", "role": "roles/storage.objectViewer", "member": "group:readers@example.com"}),
        # The import job's own account writes the weights.
        (BUCKET_MEMBER, {"bucket": "b", "role": "roles/storage.objectUser", "member": IMPORTER}),
        (PROJECT_MEMBER, {"project": "p", "role": "roles/storage.objectUser", "member": IMPORTER}),
    ],
    ids=["log-writer", "node-role", "project-reader", "group-reader", "importer-bucket", "importer-project"],
)
def test_grants_that_write_nothing_or_name_another_account_pass(resource_type: str, props: dict[str, Any]) -> None:
    assert _check(resource_type, props) == []
