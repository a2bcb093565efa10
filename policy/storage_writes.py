"""What the serving identity may write in Cloud Storage: the compile-cache folder, never the weights.

Why: with `compileCache.keep` the server gets its first writable path (serving/compile_cache.py): the
model bucket's `compile-cache/` managed folder, `roles/storage.objectUser` on that folder only. A grant
wider than that (a write role on the bucket, or on another folder) would let whoever controls the server
replace the weights every later start loads; a read-write volume that is not the cache folder would let
vLLM itself write beside them. These rules keep the one writable path where it is:

- a bucket IAM grant (member, binding or policy) gives a serving identity read-only roles only;
- a managed-folder grant gives it a writing role only on the `compile-cache/` folder;
- a Cloud Run service's Cloud Storage volume is read-only, unless gcsfuse's `only-dir=` narrows it to the
  compile-cache folder.

A serving identity is a service account whose id ends in `-vllm` (every platform's, serving/naming.py
`account_id("vllm")`; a test keeps the two in step). A member not known yet at preview (a new account's
email) is not judged here; the offline plan and its tests see the names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.access import CLOUD_RUN_SERVICE, iam_members
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
_ONLY_DIR = "only-dir="


def check_serving_writes_only_the_cache(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type == CLOUD_RUN_SERVICE:
        yield from _writable_volumes(props)
        return
    on_folder = resource_type in _FOLDER_GRANTS
    kind = _FOLDER_GRANTS[resource_type] if on_folder else _BUCKET_GRANTS[resource_type]
    folder = field(props, "managedFolder")
    for role, member in iam_members(kind, props):
        if role in READ_ONLY_ROLES or not SERVING_MEMBER.match(member.strip()):
            continue
        if on_folder and isinstance(folder, str) and folder.strip("/") + "/" == CACHE_FOLDER:
            continue
        where = f"managed folder {folder!r}" if on_folder else "a bucket"
        yield (
            f"{role} on {where} is granted to the serving identity {member!r}: it could replace the weights "
            f"every later start loads; the server reads buckets (roles/storage.objectViewer) and writes only the "
            f"{CACHE_FOLDER} managed folder (compileCache.keep)"
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
        "The serving identity reads buckets and writes only the model bucket's compile-cache/ folder; a Cloud "
        "Run service's writable Cloud Storage volume is that folder."
    ),
    resource_types=frozenset({*_BUCKET_GRANTS, *_FOLDER_GRANTS, CLOUD_RUN_SERVICE}),
    check=check_serving_writes_only_the_cache,
)
