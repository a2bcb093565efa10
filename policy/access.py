"""Who can reach a service or read a bucket: never the whole internet.

Why: a Cloud Run service bound to `allUsers` serves the model to anyone who finds the URL (and bills the
GPU for them); a bucket readable by `allUsers` publishes the weights. `allAuthenticatedUsers` is no
better: it means any Google account. Cloud Run's `invokerIamDisabled` switches the invoker check off
altogether, which is the same as binding `allUsers`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, is_sequence, mappings, strings

PUBLIC_MEMBERS = frozenset({"allusers", "allauthenticatedusers"})
# Storage ACL shortcuts that grant allUsers / allAuthenticatedUsers.
PUBLIC_PREDEFINED_ACLS = frozenset({"publicread", "publicreadwrite", "authenticatedread"})

_RUN_MEMBER = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
_RUN_BINDING = "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"
_RUN_POLICY = "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy"
_RUN_IAM_TYPES = {
    _RUN_MEMBER: "member",
    _RUN_BINDING: "binding",
    _RUN_POLICY: "policy",
    "gcp:cloudrunv2/jobIamMember:JobIamMember": "member",
    "gcp:cloudrunv2/jobIamBinding:JobIamBinding": "binding",
    "gcp:cloudrunv2/jobIamPolicy:JobIamPolicy": "policy",
    "gcp:cloudrunv2/workerPoolIamMember:WorkerPoolIamMember": "member",
    "gcp:cloudrunv2/workerPoolIamBinding:WorkerPoolIamBinding": "binding",
    "gcp:cloudrunv2/workerPoolIamPolicy:WorkerPoolIamPolicy": "policy",
}
CLOUD_RUN_SERVICE = "gcp:cloudrunv2/service:Service"

_BUCKET_IAM_TYPES = {
    "gcp:storage/bucketIAMMember:BucketIAMMember": "member",
    "gcp:storage/bucketIAMBinding:BucketIAMBinding": "binding",
    "gcp:storage/bucketIAMPolicy:BucketIAMPolicy": "policy",
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": "member",
    "gcp:storage/managedFolderIamBinding:ManagedFolderIamBinding": "binding",
    "gcp:storage/managedFolderIamPolicy:ManagedFolderIamPolicy": "policy",
}
# Legacy ACL resources: an `entity`, a list of `ROLE:entity` strings, or a predefined ACL.
_BUCKET_ACL_TYPES = frozenset(
    {
        "gcp:storage/bucketACL:BucketACL",
        "gcp:storage/bucketAccessControl:BucketAccessControl",
        "gcp:storage/defaultObjectACL:DefaultObjectACL",
        "gcp:storage/defaultObjectAccessControl:DefaultObjectAccessControl",
        "gcp:storage/objectACL:ObjectACL",
        "gcp:storage/objectAccessControl:ObjectAccessControl",
    }
)
STORAGE_BUCKET = "gcp:storage/bucket:Bucket"


def is_public_member(member: str) -> bool:
    """`allUsers` or `allAuthenticatedUsers`, however it is capitalised."""
    return member.strip().lower() in PUBLIC_MEMBERS


def iam_members(kind: str, props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(role, member) pairs an IAM member, binding or policy resource grants."""
    if kind == "member":
        for member in strings(field(props, "member")):
            yield str(field(props, "role") or "?"), member
    elif kind == "binding":
        for member in strings(field(props, "members")):
            yield str(field(props, "role") or "?"), member
    else:
        yield from _policy_data_members(field(props, "policyData"))


def _policy_data_members(policy_data: Any) -> Iterator[tuple[str, str]]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    if isinstance(policy_data, str):
        try:
            policy_data = json.loads(policy_data)
        except json.JSONDecodeError:
            # Not JSON: still refuse a public member written anywhere in it.
            for member in PUBLIC_MEMBERS:
                if member in policy_data.lower():
                    yield "?", member
            return
    for binding in mappings(field(policy_data, "bindings")):
        for member in strings(field(binding, "members")):
            yield str(field(binding, "role") or "?"), member


def check_cloud_run_not_public(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type == CLOUD_RUN_SERVICE:
        if field(props, "invokerIamDisabled") is True:
            yield (
                "invokerIamDisabled is true: Cloud Run would skip the invoker check and serve anyone on the "
                "internet; keep it false and grant roles/run.invoker to named principals"
            )
        return
    for role, member in iam_members(_RUN_IAM_TYPES[resource_type], props):
        if is_public_member(member):
            yield (
                f"{role} is granted to {member!r}: the endpoint would be public; grant it to named users, "
                "groups or service accounts instead"
            )


def check_bucket_not_public(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if resource_type in _BUCKET_IAM_TYPES:
        for role, member in iam_members(_BUCKET_IAM_TYPES[resource_type], props):
            if is_public_member(member):
                yield (
                    f"{role} is granted to {member!r} on a bucket: anyone could read the model weights; "
                    "grant roles/storage.objectViewer to the serving identity only"
                )
        return
    entities = strings(field(props, "entity"))
    role_entities = field(props, "roleEntities")
    if is_sequence(role_entities):
        entities += [entry.split(":", 1)[-1] for entry in strings(role_entities)]
    for entity in entities:
        if is_public_member(entity):
            yield f"the ACL grants access to {entity!r}; keep buckets private (uniform access, IAM only)"
    for key in ("predefinedAcl", "defaultAcl"):
        predefined = field(props, key)
        if isinstance(predefined, str) and predefined.strip().lower() in PUBLIC_PREDEFINED_ACLS:
            yield f"{key} {predefined!r} makes objects public; leave it unset (uniform access, IAM only)"


def check_bucket_private(_resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if field(props, "uniformBucketLevelAccess") is not True:
        yield (
            "uniformBucketLevelAccess must be true: without it, per-object ACLs can publish single files "
            "behind IAM's back"
        )
    prevention = field(props, "publicAccessPrevention")
    if prevention != "enforced":
        yield (
            f"publicAccessPrevention is {prevention!r}; set it to 'enforced' so that no IAM or ACL change can "
            "ever make the bucket public"
        )


CLOUD_RUN_NOT_PUBLIC = Guardrail(
    name="cloud-run-not-public",
    description="No Cloud Run service, job or worker pool is invokable by allUsers or allAuthenticatedUsers.",
    resource_types=frozenset({*_RUN_IAM_TYPES, CLOUD_RUN_SERVICE}),
    check=check_cloud_run_not_public,
)

BUCKET_NOT_PUBLIC = Guardrail(
    name="bucket-not-public",
    description="No bucket IAM grant or ACL names allUsers or allAuthenticatedUsers.",
    resource_types=frozenset({*_BUCKET_IAM_TYPES, *_BUCKET_ACL_TYPES}),
    check=check_bucket_not_public,
)

BUCKET_PRIVATE = Guardrail(
    name="bucket-private",
    description="Buckets use uniform bucket-level access with public access prevention enforced.",
    resource_types=frozenset({STORAGE_BUCKET}),
    check=check_bucket_private,
)
