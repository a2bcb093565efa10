"""One stack's complete settings: the union of the platform variants, parsed once from its config, then
read-only everywhere.

Why: every default that differs per accelerator and every cross-field rule (GPU minimums, regions,
Cloud Run concurrency versus vLLM's batch) is decided before a resource exists, so a wrong stack
file fails the preview with the key at fault rather than a rollout ten minutes later.

Which platform a stack runs on is decided once: a `gke` block makes it a `GkeStack` (stacks/gke_stack.py);
otherwise its `accelerator` picks the variant whose platform's shapes rent it (serving/data/shapes.json), a
`CloudRunStack` (stacks/cloud_run_stack.py, with a `cloudRun` block) or a `TpuStack` (stacks/tpu_stack.py,
with a `tpu` block). What every variant says is stacks/stack_base.py. Each variant owns what differs by
platform (the vLLM port, the model root, the APIs to enable, the job image, what the capacity planner
assumes), so no other module asks which platform it is looking at; `deploy()` dispatches on the variant once.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Tag

from stacks.cloud_run_stack import CloudRunStack
from stacks.gke_stack import GkeStack
from stacks.stack_base import StackBase, rented_on
from stacks.tpu_stack import TpuStack

__all__ = ["CloudRunStack", "GkeStack", "StackSettings", "TpuStack", "stack_variant"]


def _platform_tag(data: Any) -> str | None:  # noqa: ANN401 - raw stack data or a parsed stack
    """Which variant a stack file is: a `gke` block makes it a fleet; otherwise its accelerator decides."""
    if isinstance(data, StackBase):
        return str(type(data).PLATFORM)
    if not isinstance(data, dict) or data.get("accelerator") is None:
        return None
    accelerator = data["accelerator"]
    by_accelerator = {
        **dict.fromkeys(rented_on("cloud-run"), CloudRunStack.PLATFORM),
        **dict.fromkeys(rented_on("tpu-vm"), TpuStack.PLATFORM),
    }
    return GkeStack.PLATFORM if "gke" in data else by_accelerator.get(accelerator, str(accelerator))


def stack_variant(data: Any) -> type[CloudRunStack] | type[TpuStack] | type[GkeStack] | None:  # noqa: ANN401 - raw stack data
    """The model a stack file is validated with (the union's discriminator, applied by stacks.loading), or None
    when its `accelerator` is missing or names no platform.

    Why not the union's own validator: it holds all three variants, so every plan built the validators of the
    two platforms it is not (settings models build theirs on first use: stacks/base.py)."""
    return _VARIANTS.get(_platform_tag(data) or "")


_VARIANTS: dict[str, type[CloudRunStack] | type[TpuStack] | type[GkeStack]] = {
    variant.PLATFORM: variant for variant in (CloudRunStack, TpuStack, GkeStack)
}

# One stack file: the variant is chosen by its `gke` block, else by `accelerator` (stack_variant; stacks.loading
# reports a wrong one by name).
StackSettings = Annotated[
    Annotated[CloudRunStack, Tag(CloudRunStack.PLATFORM)]
    | Annotated[TpuStack, Tag(TpuStack.PLATFORM)]
    | Annotated[GkeStack, Tag(GkeStack.PLATFORM)],
    Discriminator(_platform_tag),
]
