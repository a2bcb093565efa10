"""The private GCS bucket that holds model weights, readable by the serving identities only.

With a compile cache (`compileCache.keep`, serving/compile_cache.py) it also holds the `compile-cache/`
managed folder, the one place the serving identity may write (`roles/storage.objectUser` on that folder
only, never on the bucket), and a lifecycle rule that deletes cache objects after `max_age_days`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi

from components.wire import gcp, storage
from serving.compile_cache import CACHE_WRITER_ROLE
from serving.gcp_names import BINDING_KEY, bucket_path_problem
from serving.naming import TypeToken

if TYPE_CHECKING:
    from pulumi_gcp.storage._inputs import BucketLifecycleRuleArgsDict


@dataclass(frozen=True)
class CacheFolder:
    """A folder of the bucket one member may write (vLLM's compile cache), its objects deleted after a while."""

    folder: str  # e.g. `compile-cache/`: a managed folder's name ends in '/'
    writer: pulumi.Input[str]
    max_age_days: int

    def __post_init__(self) -> None:
        if not self.folder.endswith("/") or bucket_path_problem(self.folder.rstrip("/")):
            raise ValueError(f"CacheFolder.folder {self.folder!r}: a relative bucket path ending in '/'")
        if self.max_age_days < 1:
            raise ValueError(f"CacheFolder.max_age_days {self.max_age_days}: at least 1")


@dataclass(frozen=True)
class ModelBucketArgs:
    """Where the bucket lives and who may read it.

    `readers` maps a short stable key (used in child resource names, so reordering never replaces a
    binding) to an IAM member such as `serviceAccount:…`.
    """

    location: str
    readers: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    # Per reader key, where its binding lived before this bucket owned it (so it is moved, not replaced:
    # replacing an IAM member deletes the binding its replacement has just made).
    reader_aliases: Mapping[str, Sequence[pulumi.Alias]] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    # Off by default: deleting a stack must not silently delete tens of GB of imported weights.
    force_destroy: bool = False
    # The bucket's global name; None lets Pulumi name it (a stack that streams gs:// needs it known).
    bucket_name: str | None = None
    # The compile cache's folder, writable by one member; None: nobody writes to the bucket but the imports.
    cache: CacheFolder | None = None
    # Folders that must exist before anything is imported into them (each gets an empty `<folder>/.keep`):
    # vLLM's LoRA resolver refuses to start on a missing adapters/ folder (serving/lora.py).
    kept_folders: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for folder in self.kept_folders:
            if not BINDING_KEY.match(folder):
                raise ValueError(
                    f"ModelBucketArgs.kept_folders {folder!r}: one folder name of lowercase letters, digits, '-'"
                )
        if not self.location:
            raise ValueError("ModelBucketArgs.location is required (a region such as us-east4)")
        for key in self.readers:
            if not BINDING_KEY.match(key):
                raise ValueError(f"ModelBucketArgs.readers key {key!r}: lowercase letters, digits and '-'")


class ModelBucket(pulumi.ComponentResource):
    """A private bucket for weights. Owns: the bucket and its reader bindings. Does not own: the weights."""

    name: pulumi.Output[str]
    url: pulumi.Output[str]

    def __init__(self, name: str, args: ModelBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.MODEL_BUCKET, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        bucket = gcp.Bucket(
            f"{name}-bucket",
            location=args.location,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=args.force_destroy,
            labels=dict(args.labels),
            opts=child,
            name=args.bucket_name,
            lifecycle_rules=_cache_expiry(args.cache),
        )
        for key, member in args.readers.items():
            gcp.BucketIamMember(
                f"{name}-reader-{key}",
                bucket=bucket.name,
                role="roles/storage.objectViewer",
                member=member,
                opts=pulumi.ResourceOptions(parent=self, aliases=list(args.reader_aliases.get(key, ()))),
            )
        if args.cache is not None:
            folder = gcp.ManagedFolder(
                f"{name}-compile-cache",
                bucket=bucket.name,
                name=args.cache.folder,
                # Deleting the folder leaves its objects to the lifecycle rule.
                force_destroy=True,
                opts=child,
            )
            gcp.ManagedFolderIamMember(
                f"{name}-compile-cache-writer",
                bucket=bucket.name,
                managed_folder=folder.name,
                role=CACHE_WRITER_ROLE,
                member=args.cache.writer,
                opts=child,
            )
        self.kept_folders: list[pulumi.Resource] = [
            gcp.BucketObject(
                f"{name}-keep-{folder}", bucket=bucket.name, name=f"{folder}/.keep", content=" ", opts=child
            )
            for folder in args.kept_folders
        ]
        self.name = bucket.name
        self.url = bucket.name.apply(lambda bucket_name: f"gs://{bucket_name}")
        self.register_outputs({"name": self.name, "url": self.url})


def _cache_expiry(cache: CacheFolder | None) -> list[BucketLifecycleRuleArgsDict] | None:
    """Delete the cache's objects `max_age_days` after they were written; nothing else expires."""
    if cache is None:
        return None
    return [
        storage.lifecycle_rule(
            action=storage.lifecycle_action(type="Delete"),
            condition=storage.lifecycle_condition(age=cache.max_age_days, matches_prefixes=[cache.folder]),
        )
    ]
