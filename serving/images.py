"""Container images: where Docker Hub images are mirrored, and which vLLM image serves each accelerator.

What pins a reference (a release tag or a digest, never `:latest`) is the policy pack's own rule,
policy/image_pins.py, which the settings and components import so that the two gates cannot disagree.
"""

from __future__ import annotations

from serving.shapes import Accelerator, accelerator_facts

# The vLLM images the stacks pull unless they name another pinned one: vLLM publishes one CUDA image for
# every NVIDIA GPU and one TPU image, so the image follows the accelerator's family, not its name.
CUDA_IMAGE = "vllm/vllm-openai:v0.32.0"
TPU_IMAGE = "vllm/vllm-tpu:v0.32.0"
DEFAULT_IMAGES: dict[Accelerator, str] = {
    accelerator: TPU_IMAGE if accelerator_facts(accelerator).family == "tpu" else CUDA_IMAGE
    for accelerator in Accelerator.every()
}
# The GKE fleet's other images, by release tag (serving/data/image-digests.json says which digest each is
# pulled by): the inference gateway's endpoint picker (llm-d-router v0.10.0), and the Custom Metrics Stackdriver
# Adapter the vendored manifest names (components/gke/vendor/SOURCE.md; a test keeps the two equal).
PICKER_TAG = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
METRICS_ADAPTER_TAG = "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
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
