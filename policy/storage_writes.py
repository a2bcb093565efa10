"""What the serving identity may write in Cloud Storage: the compile-cache folder, never the weights.

Why: with `compileCache.keep` the server gets its first writable path (serving/compile_cache.py): the
model bucket's `compile-cache/` managed folder, `roles/storage.objectUser` on that folder only. A grant
wider than that (a write role on the bucket, or on another folder) would let whoever controls the server
replace the weights every later start loads; a read-write volume that is not the cache folder would let
vLLM itself write beside them. These rules keep the one writable path where it is:

- judged on the effective grant: a bucket grant, a managed-folder grant, and a project-level (or folder- or
  organization-level) grant, whose storage roles reach every bucket of the project;
- a write role (any storage role that is not read-only, editor, owner, or a custom role whose permissions
  the rule cannot see) may go to the serving identity only on the `compile-cache/` managed folder;
- the serving identity is its service account (id ending in `-vllm`, every platform's, serving/naming.py
  `account_id("vllm")`; a test keeps the two in step) or a Workload Identity principal (`principal://` of a
  workload identity pool: a GKE pod's Kubernetes service account granted directly);
- a member that may include the serving identity without naming it (`principalSet://`, `group:`,
  `domain:`, `allUsers`, `allAuthenticatedUsers`, the legacy `projectOwner:`/`projectEditor:`/
  `projectViewer:` sets) gets no write role anywhere, the cache folder included: a writer nobody can list
  could poison the compile cache every later start loads;
- a Cloud Run service's Cloud Storage volume is read-only, unless gcsfuse's `only-dir=` narrows it to the
  compile-cache folder.

A member not known yet at preview (a new account's email) is not judged here; the offline plan and its tests
see the names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.access import CLOUD_RUN_SERVICE, PUBLIC_MEMBERS, iam_members
from policy.guardrail import Guardrail
from policy.props import field, mappings, strings

# The model bucket's compile-cache folder (serving/compile_cache.py CACHE_FOLDER).
CACHE_FOLDER = "compile-cache/"
# `serviceAccount:<id>@...` of a serving identity.
SERVING_MEMBER = re.compile(r"^serviceAccount:[a-z0-9-]+-vllm@", re.IGNORECASE)
# Cloud Storage's predefined roles that cannot create, replace or delete an object (cloud.google.com/storage/
# docs/access-control/iam-roles). Any other role on a bucket is treated as one that can.
READ_ONLY_ROLES = frozenset(
    {
        "roles/storage.objectViewer",
        "roles/storage.legacyBucketReader",
        "roles/storage.legacyObjectReader",
        "roles/storage.bucketViewer",
    }
)

# Basic roles that write every bucket of the project (storage.objects.create/delete among their permissions).
BASIC_WRITING_ROLES = frozenset({"roles/editor", "roles/owner"})
# A Workload Identity principal: one workload's identity (GKE: a namespace's Kubernetes service account).
WORKLOAD_PRINCIPAL = re.compile(
    r"^principal://iam\.googleapis\.com/projects/[^/]+/locations/[^/]+/workloadIdentityPools/"
)
# Members that stand for a set of identities the serving one may belong to.
_SET_PREFIXES = ("principalset://", "group:", "domain:", "projectowner:", "projecteditor:", "projectviewer:")

_BUCKET_GRANTS = {
    "gcp:storage/bucketIAMMember:BucketIAMMember": "member",
    "gcp:storage/bucketIAMBinding:BucketIAMBinding": "binding",
    "gcp:storage/bucketIAMPolicy:BucketIAMPolicy": "policy",
}
_FOLDER_GRANTS = {
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": "member",
    "gcp:storage/managedFolderIamBinding:ManagedFolderIamBinding": "binding",
    "gcp:storage/managedFolderIamPolicy:ManagedFolderIamPolicy": "policy",
}
# Grants above the bucket: every bucket under them inherits the role.
_PROJECT_GRANTS = {
    "gcp:projects/iAMMember:IAMMember": "member",
    "gcp:projects/iAMBinding:IAMBinding": "binding",
    "gcp:projects/iAMPolicy:IAMPolicy": "policy",
    "gcp:folder/iAMMember:IAMMember": "member",
    "gcp:folder/iAMBinding:IAMBinding": "binding",
    "gcp:folder/iAMPolicy:IAMPolicy": "policy",
    "gcp:organizations/iAMMember:IAMMember": "member",
    "gcp:organizations/iAMBinding:IAMBinding": "binding",
    "gcp:organizations/iAMPolicy:IAMPolicy": "policy",
}
_ONLY_DIR = "only-dir="


def may_write_objects(role: str, *, on_bucket: bool) -> bool:
    """Whether a role can create, replace or delete objects where it is granted.

    On a bucket or folder, every role but the read-only ones (conservative). Above the bucket, the storage
    roles that are not read-only, the basic editor/owner roles and custom roles (`projects/.../roles/...`,
    `organizations/.../roles/...`), whose permissions the plan does not show; other predefined roles
    (logging, monitoring, secret access) cannot touch an object.
    """
    role = role.strip()
    if role in READ_ONLY_ROLES:
        return False
    if on_bucket:
        return True
    return role.startswith("roles/storage.") or role in BASIC_WRITING_ROLES or not role.startswith("roles/")


def member_kind(member: str) -> str | None:
    """ "serving" (the serving identity itself), "set" (may include it), or None (another identity)."""
    text = member.strip()
    lowered = text.lower()
    if SERVING_MEMBER.match(text) or WORKLOAD_PRINCIPAL.match(text):
        return "serving"
    if lowered in PUBLIC_MEMBERS or lowered.startswith(_SET_PREFIXES):
        return "set"
    return None


def check_serving_writes_only_the_cache(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type == CLOUD_RUN_SERVICE:
        yield from _writable_volumes(props)
        return
    on_folder = resource_type in _FOLDER_GRANTS
    above_bucket = resource_type in _PROJECT_GRANTS
    kind = _PROJECT_GRANTS.get(resource_type) or _FOLDER_GRANTS.get(resource_type) or _BUCKET_GRANTS[resource_type]
    folder = field(props, "managedFolder")
    is_cache = on_folder and isinstance(folder, str) and folder.strip("/") + "/" == CACHE_FOLDER
    if above_bucket:
        where = "the project (every bucket in it)" if "projects/" in resource_type else "every project under it"
    else:
        where = f"managed folder {folder!r}" if on_folder else "a bucket"
    for role, member in iam_members(kind, props):
        if not may_write_objects(role, on_bucket=not above_bucket):
            continue
        who = member_kind(member)
        if who == "serving" and not is_cache:
            yield (
                f"{role} on {where} is granted to the serving identity {member!r}: it could replace the weights "
                f"every later start loads; the server reads buckets (roles/storage.objectViewer) and writes only "
                f"the {CACHE_FOLDER} managed folder (compileCache.keep)"
            )
        elif who == "set":
            yield (
                f"{role} on {where} is granted to {member!r}, a set of identities that may include the serving "
                f"identity (or anyone): it could replace the weights or poison the {CACHE_FOLDER} cache every "
                "later start loads; grant writes to named service accounts only"
            )


def _writable_volumes(props: Mapping[str, Any]) -> Iterator[str]:
    for index, volume in enumerate(mappings(field(props, "template", "volumes"))):
        if field(volume, "gcs") is None or field(volume, "gcs", "readOnly") is True:
            continue
        options = [option.strip() for option in strings(field(volume, "gcs", "mountOptions"))]
        narrowed = [option.removeprefix(_ONLY_DIR) for option in options if option.startswith(_ONLY_DIR)]
        if narrowed and all(path.strip("/").startswith(CACHE_FOLDER) for path in narrowed):
            continue
        name = field(volume, "name")
        label = f"volume {name!r}" if isinstance(name, str) else f"volumes[{index}]"
        yield (
            f"{label}: a read-write Cloud Storage volume outside the {CACHE_FOLDER} folder (mountOptions "
            f"{options!r}); mount the model bucket readOnly: true, and a writable volume only with "
            f"only-dir={CACHE_FOLDER}<platform>"
        )


SERVING_WRITES_ONLY_THE_CACHE = Guardrail(
    name="serving-identity-writes-only-compile-cache",
    description=(
        "The serving identity reads buckets and writes only the model bucket's compile-cache/ folder, judged at "
        "project, bucket and folder level and for every member form; a Cloud Run service's writable Cloud "
        "Storage volume is that folder."
    ),
    resource_types=frozenset({*_BUCKET_GRANTS, *_FOLDER_GRANTS, *_PROJECT_GRANTS, CLOUD_RUN_SERVICE}),
    check=check_serving_writes_only_the_cache,
)
