"""The load generator's image, built by the stack when its `bench` block names none.

Why the stack builds it: a hand-built, hand-pushed verify-bench image drifts from the checkout that reads
its results (`verify bench --on-cloud-run` merges what the job's `verify bench task` wrote). With
pulumi-docker the image is built from this checkout by `pulumi up` (never on preview: a preview must not
need a Docker engine), pushed to the stack's own Artifact Registry repository, and the job runs it by the
pushed digest, so a rebuilt tag never changes a job behind its back. The tag is the project's version; the
repository's tags are mutable because the same version is rebuilt whenever its sources change (the digest,
not the tag, is what runs).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pulumi

from components.derived_image import DerivedImage, DerivedImageArgs
from components.image_mirror import ImageMirror
from deploy.context import StackContext
from stacks.settings import CloudRunStack

CONTEXT = "."  # the repository root: the Dockerfile copies verify/, serving/, stacks/, preview/, policy/
DOCKERFILE = "images/verify-bench/Dockerfile"
# What images/verify-bench/Dockerfile starts FROM (its ARG default), pulled through the stack's mirror.
BASE_IMAGE = "python:3.12-slim"
IMAGE_NAME = "verify-bench"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def image_tag() -> str:
    """``v<project version>`` (pyproject.toml): the tag names the release; the digest names the build."""
    version = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    return f"v{version}"


def bench_image(
    settings: CloudRunStack, context: StackContext, mirror: ImageMirror | None, opts: pulumi.ResourceOptions
) -> pulumi.Input[str]:
    """The job's image: the stack's pinned `bench.image`, or the digest of the one built here."""
    bench = settings.bench
    if bench is not None and bench.image is not None:
        return bench.image
    built = DerivedImage(
        context.names.bench_image,
        DerivedImageArgs(
            project=context.project,
            region=settings.region,
            repository_id=context.names.bench_image_repository,
            context=CONTEXT,
            dockerfile=DOCKERFILE,
            base_image=mirror.image(BASE_IMAGE) if mirror is not None else BASE_IMAGE,
            name=IMAGE_NAME,
            tag=image_tag(),
            labels=dict(context.labels),
            immutable_tags=False,
            description="gemma-serving load generator (gemma-verify bench task)",
        ),
        opts,
    )
    return built.repo_digest
