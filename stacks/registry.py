"""Where the stack's containers are pulled from: a same-region Artifact Registry mirror of Docker Hub.

Why: pulling `vllm/vllm-openai` straight from Docker Hub is rate-limited for anonymous pulls and crosses
the internet on every deploy; an Artifact Registry remote repository in the stack's region caches the
pinned tag once and serves it to Cloud Run (and to TPU VMs) from Google's network. A stack may also name
a build context: a derived image built from the mirrored base and pushed to a standard repository.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import Field, field_validator

from policy.image_pins import image_pin_problem
from stacks.base import SettingsModel

_IMAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$")


class ImageBuildSettings(SettingsModel):
    """A derived image: a Dockerfile in this repository built FROM the mirrored vLLM image."""

    # Build context relative to the repository root (e.g. images/vllm-gemma); it holds the Dockerfile.
    context: str
    dockerfile: str = "Dockerfile"
    # Image name and tag inside the stack's standard repository; the tag names a build, never :latest.
    name: str = "vllm-gemma"
    tag: str
    platform: str = "linux/amd64"

    @field_validator("context", "dockerfile")
    @classmethod
    def _relative(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{value!r} must be a path inside this repository, e.g. images/vllm-gemma")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _IMAGE_NAME.match(value):
            raise ValueError(f"{value!r}: lowercase letters, digits, '.', '_', '-' and '/'")
        return value

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        problem = image_pin_problem(f"image:{value}")
        if problem:
            raise ValueError(f"tag {value!r} does not name one build (no latest/nightly/main); e.g. v0.32.0-gemma1")
        return value


class RegistrySettings(SettingsModel):
    """How the stack gets its container images."""

    # Pull Docker Hub images through an Artifact Registry remote repository in the stack's region.
    mirror_docker_hub: bool = True
    build: ImageBuildSettings | None = None
    # Artifact Registry keeps pulled or pushed versions this many days after they stop being tagged.
    keep_untagged_days: int = Field(default=30, ge=1, le=3650)
