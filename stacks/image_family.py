"""The vLLM image a stack runs must be the build for its accelerator.

Why: vLLM publishes one image per accelerator family, and the wrong one fails only on the machine:
`vllm/vllm-tpu` on an NVIDIA GPU finds no TPU and exits, `vllm/vllm-openai` (CUDA) on a TPU VM finds no
GPU. Both start pulling gigabytes first. Images of other names (a derived build, another registry's
copy) are the stack's own choice and pass; only vLLM's own repository names are judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.shapes import Accelerator


@dataclass(frozen=True)
class ImageBuild:
    """One of vLLM's per-accelerator-family images; each stack variant names the one it needs."""

    # "the CUDA build" (what a stack needs) and "vLLM's CUDA (NVIDIA) build" (what an image is).
    name: str
    described_as: str
    # vLLM's Docker Hub repository names of this build.
    repositories: tuple[str, ...]
    # The reference the error suggests (the default when `image` is unset).
    suggestion: str


# vLLM's Docker Hub repositories by the accelerator family they are built for
# (https://hub.docker.com/u/vllm: vllm-openai is the CUDA build, vllm-tpu the TPU build), 2026-11.
CUDA_BUILD = ImageBuild("CUDA", "CUDA (NVIDIA)", ("vllm-openai",), "vllm/vllm-openai:<release>")
TPU_BUILD = ImageBuild("TPU", "TPU", ("vllm-tpu",), "vllm/vllm-tpu:<release>")
_BUILDS = (CUDA_BUILD, TPU_BUILD)


def _repository(image: str) -> str:
    """`vllm/vllm-tpu:v0.32.0` -> `vllm-tpu`; `docker.io/vllm/vllm-openai@sha256:...` -> `vllm-openai`."""
    name = image.partition("@")[0]
    last = name.rsplit("/", 1)[-1]
    return last.partition(":")[0]


def image_family_problem(image: str, accelerator: Accelerator, needs: ImageBuild, *, key: str = "image") -> str | None:
    """Say why `image` is vLLM's build for another accelerator family than ``needs``, or None."""
    repository = _repository(image)
    for build in _BUILDS:
        if build != needs and repository in build.repositories:
            return (
                f"{key}: {image!r} is vLLM's {build.described_as} build; a {accelerator} stack needs the "
                f"{needs.name} build ({needs.suggestion}, the default when image is unset)"
            )
    return None
