"""The private GCS bucket that holds model weights, readable by the serving identities only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from serving.gcp_names import BINDING_KEY
from serving.naming import TypeToken


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

    def __post_init__(self) -> None:
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
        bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            location=args.location,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=args.force_destroy,
            labels=dict(args.labels),
            opts=child,
        )
        for key, member in args.readers.items():
            gcp.storage.BucketIAMMember(
                f"{name}-reader-{key}",
                bucket=bucket.name,
                role="roles/storage.objectViewer",
                member=member,
                opts=pulumi.ResourceOptions(parent=self, aliases=list(args.reader_aliases.get(key, ()))),
            )
        self.name = bucket.name
        self.url = bucket.name.apply(lambda bucket_name: f"gs://{bucket_name}")
        self.register_outputs({"name": self.name, "url": self.url})
