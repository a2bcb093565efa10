"""The images a stack pulls: through its Docker Hub mirror (default) or built from a context here.

Why: pulling `vllm/vllm-openai` straight from Docker Hub is rate-limited and crosses the internet on
every deploy; the mirror in the stack's region caches the pinned tag once. A stack may also derive an
image (a Dockerfile in this repository FROM the mirrored base), pushed to its own repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pulumi

from components.derived_image import DerivedImage, DerivedImageArgs
from components.image_mirror import ImageMirror, ImageMirrorArgs
from deploy.context import StackContext
from serving.images import docker_hub_path
from stacks.settings import StackSettings

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ImageSupply:
    """What the service and the import job pull."""

    serving: pulumi.Input[str]
    job: pulumi.Input[str]
    # The Docker Hub mirror, when the stack has one: a TPU node must wait for it (and its reader grant).
    mirror: ImageMirror | None = None


def image_supply(
    settings: StackSettings,
    context: StackContext,
    opts: pulumi.ResourceOptions,
    *,
    readers: Mapping[str, pulumi.Input[str]] | None = None,
) -> ImageSupply:
    """The pinned images, through the stack's Docker Hub mirror (default) or built from a context here.

    `readers` are identities that pull by themselves (a TPU VM); Cloud Run needs no grant (image_mirror).
    """
    labels = context.labels
    registry = settings.registry
    mirror: ImageMirror | None = None
    if registry.mirror_docker_hub:
        mirror = ImageMirror(
            context.names.image_mirror,
            ImageMirrorArgs(
                project=context.project,
                region=settings.region,
                repository_id=context.names.mirror_repository,
                readers=dict(readers or {}),
                keep_untagged_days=registry.keep_untagged_days,
                labels=dict(labels),
            ),
            opts,
        )

    def pulled(reference: str) -> pulumi.Input[str]:
        return mirror.image(reference) if mirror is not None and docker_hub_path(reference) else reference

    serving: pulumi.Input[str] = pulled(settings.image_ref)
    if registry.build is not None:
        build = registry.build
        if not (ROOT / build.context / build.dockerfile).is_file():
            raise ValueError(
                f"registry.build: no {build.dockerfile} in {build.context}/ (paths are relative to the repository)"
            )
        derived = DerivedImage(
            context.names.derived_image,
            DerivedImageArgs(
                project=context.project,
                region=settings.region,
                repository_id=context.names.image_repository,
                context=build.context,
                dockerfile=build.dockerfile,
                base_image=serving,
                name=build.name,
                tag=build.tag,
                platform=build.platform,
                labels=dict(labels),
            ),
            opts,
        )
        serving = derived.repo_digest
    return ImageSupply(serving=serving, job=pulled(settings.import_image), mirror=mirror)
