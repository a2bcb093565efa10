"""Container images must name one build: a release tag or a digest, never a moving tag.

Why: with `:latest`, `:nightly` or no tag at all, two `pulumi up` runs of the same commit can deploy two
different vLLM builds (Cloud Run resolves the tag at deploy time), and a rollback redeploys whatever the
tag points to today. The stack settings refuse such references too, by the same rule (policy/image_pins.py);
this guardrail also catches images written straight into a resource.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.image_pins import PINNED_HELP, image_pin_problem
from policy.props import field, mappings
from policy.tpu import DYNAMIC_PREFIX, GCP_QUEUED_RESOURCE, node_specs, queued_resource_body

# Where each Cloud Run v2 resource keeps its containers.
CONTAINER_PATHS: dict[str, tuple[str, ...]] = {
    "gcp:cloudrunv2/service:Service": ("template", "containers"),
    "gcp:cloudrunv2/workerPool:WorkerPool": ("template", "containers"),
    "gcp:cloudrunv2/job:Job": ("template", "template", "containers"),
}
# A TPU VM runs its container from the startup script; find the official vLLM images named there
# (optionally behind a registry or mirror path), e.g. `vllm/vllm-tpu:v0.32.0`.
_SCRIPT_VLLM_IMAGE = re.compile(r"(?<![\w./-])(?:[\w.-]+(?::\d+)?/)*vllm/vllm-(?:tpu|openai)[^\s'\"]*")


def _startup_script_images(resource_type: str, props: Mapping[str, Any]) -> Iterator[str]:
    body = queued_resource_body(resource_type, props)
    if body is None:
        return
    for index, spec in enumerate(node_specs(body)):
        script = field(spec, "node", "metadata", "startup-script")
        if not isinstance(script, str):
            continue
        for reference in sorted(set(_SCRIPT_VLLM_IMAGE.findall(script))):
            problem = image_pin_problem(reference)
            if problem:
                yield f"the startup script of node {index} runs {problem}"


def check_images_pinned(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if resource_type not in CONTAINER_PATHS:
        yield from _startup_script_images(resource_type, props)
        return
    path = CONTAINER_PATHS[resource_type]
    for index, container in enumerate(mappings(field(props, *path))):
        image = field(container, "image")
        where = f"{'.'.join(path)}[{index}].image"
        if not isinstance(image, str) or not image.strip():
            yield f"{where} is missing; name an image with {PINNED_HELP}"
            continue
        problem = image_pin_problem(image)
        if problem:
            yield f"{where}: {problem}"


IMAGES_PINNED = Guardrail(
    name="images-pinned",
    description="Cloud Run services, jobs and worker pools, and TPU startup scripts, run images pinned by "
    "release tag or digest.",
    resource_types=frozenset({*CONTAINER_PATHS, GCP_QUEUED_RESOURCE}),
    type_prefixes=(DYNAMIC_PREFIX,),
    check=check_images_pinned,
)
