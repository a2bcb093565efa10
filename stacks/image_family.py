"""The vLLM image a stack runs must be the build for its accelerator.

Why: vLLM publishes one image per accelerator family, and the wrong one fails only on the machine:
`vllm/vllm-tpu` on an NVIDIA GPU finds no TPU and exits, `vllm/vllm-openai` (CUDA) on a TPU VM finds no
GPU. Both start pulling gigabytes first. Images of other names (a derived build, another registry's
copy) are the stack's own choice and pass; only vLLM's own repository names are judged.
"""

from __future__ import annotations

from serving.accelerators import CLOUD_RUN_GPUS, Accelerator

# vLLM's Docker Hub repositories by the accelerator family they are built for
# (https://hub.docker.com/u/vllm: vllm-openai is the CUDA build, vllm-tpu the TPU build), 2026-11.
_GPU_IMAGES = ("vllm-openai",)
_TPU_IMAGES = ("vllm-tpu",)


def _repository(image: str) -> str:
    """`vllm/vllm-tpu:v0.32.0` -> `vllm-tpu`; `docker.io/vllm/vllm-openai@sha256:...` -> `vllm-openai`."""
    name = image.partition("@")[0]
    last = name.rsplit("/", 1)[-1]
    return last.partition(":")[0]


def image_family_problem(image: str, accelerator: Accelerator, *, key: str = "image") -> str | None:
    """Say why `image` is vLLM's build for another accelerator family, or None."""
    repository = _repository(image)
    if accelerator in CLOUD_RUN_GPUS and repository in _TPU_IMAGES:
        return (
            f"{key}: {image!r} is vLLM's TPU build; a {accelerator.value} stack needs the CUDA build "
            "(vllm/vllm-openai:<release>, the default when image is unset)"
        )
    if accelerator not in CLOUD_RUN_GPUS and repository in _GPU_IMAGES:
        return (
            f"{key}: {image!r} is vLLM's CUDA (NVIDIA) build; a {accelerator.value} stack needs the TPU build "
            "(vllm/vllm-tpu:<release>, the default when image is unset)"
        )
    return None
