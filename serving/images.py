"""Container images: what pins a reference, where Docker Hub images are mirrored, which vLLM image serves.

Why: `:latest` and `:nightly` make two `pulumi up` runs of the same commit deploy different vLLM builds,
and Cloud Run resolves a tag only at deploy time; a release tag or a digest keeps a stack reproducible.
"""

from __future__ import annotations

import re

from serving.accelerators import Accelerator

# Tags that name a moving target rather than a release.
FLOATING_TAGS = frozenset({"latest", "nightly", "main", "master", "dev", "edge", "stable"})
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

PINNED_HELP = "a release tag (e.g. vllm/vllm-openai:v0.32.0) or a digest (…@sha256:<64 hex>)"


def image_pin_problem(reference: str) -> str | None:
    """Say why an image reference is not pinned, or None when it is."""
    name, at, digest = reference.partition("@")
    if at:
        return None if _DIGEST.match(digest) else f"{reference!r} has a malformed digest; use {PINNED_HELP}"
    last_segment = name.rsplit("/", 1)[-1]
    if ":" not in last_segment:
        return f"{reference!r} has no tag (it would pull :latest); use {PINNED_HELP}"
    tag = last_segment.rsplit(":", 1)[1]
    if not _TAG.match(tag):
        return f"{reference!r} has a malformed tag; use {PINNED_HELP}"
    if tag.lower() in FLOATING_TAGS:
        return f"{reference!r} uses the floating tag :{tag}; use {PINNED_HELP}"
    return None


# The vLLM images the stacks pull unless they name another pinned one.
DEFAULT_IMAGES: dict[Accelerator, str] = {
    Accelerator.NVIDIA_L4: "vllm/vllm-openai:v0.32.0",
    Accelerator.NVIDIA_RTX_PRO_6000: "vllm/vllm-openai:v0.32.0",
    Accelerator.TPU_V6E: "vllm/vllm-tpu:v0.32.0",
}
# Docker Hub's own hostnames; images without a registry host come from Docker Hub too.
_DOCKER_HUB_HOSTS = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def docker_hub_path(image: str) -> str | None:
    """The path of a Docker Hub image inside a Docker Hub mirror, or None for another registry.

    `vllm/vllm-openai:v0.32.0` -> `vllm/vllm-openai:v0.32.0`; `python:3.12` -> `library/python:3.12`
    (Docker Hub's official images live under `library/`); `ghcr.io/x/y:1` -> None.
    """
    first, slash, rest = image.partition("/")
    if slash and first in _DOCKER_HUB_HOSTS:
        image = rest
    elif slash and ("." in first or ":" in first or first == "localhost"):
        return None
    return image if "/" in image.partition("@")[0].rsplit(":", 1)[0] else f"library/{image}"


def registry_host(region: str) -> str:
    """Artifact Registry's Docker host for a region (https://cloud.google.com/artifact-registry/docs/docker)."""
    return f"{region}-docker.pkg.dev"
