"""The plan's image notes: which digest each image the stack runs is pulled by, or that it has none.

Why: a release tag can be pushed again, so `vllm/vllm-openai:v0.32.0` alone says nothing about the bytes the
mirror will serve (issue 46: the vLLM, picker and metrics-adapter images were pinned by tag). The program
pulls `tag@digest` where serving/data/image-digests.json records the digest; this says so, with where the
digest was read and whether it was confirmed, and says plainly when an image is pinned by its tag only.
"""

from __future__ import annotations

from serving.image_digests import digest_of
from serving.images import METRICS_ADAPTER_TAG, PICKER_TAG
from stacks.settings import GkeStack, StackSettings

TABLE = "serving/data/image-digests.json"


def _note(what: str, reference: str) -> str:
    tag, at, digest = reference.partition("@")
    entry = digest_of(tag)
    inspect = f"`docker buildx imagetools inspect {tag}` shows it"
    if at and (entry is None or entry.digest != digest):
        return f"image: {what} {tag} is pulled by the digest the stack names, {digest}."
    if entry is None or entry.digest is None:
        return (
            f"image: {what} {tag} is pinned by its release tag only (no digest of it could be read offline, {TABLE}): "
            f"the registry serves whatever the tag names at the first pull. Pin it as {tag}@sha256:<digest> "
            f"({inspect})."
        )
    if entry.confirmed:
        return f"image: {what} {tag} is pulled by its digest {entry.digest} ({TABLE})."
    return (
        f"image: {what} {tag} is pulled by the digest {entry.digest}, read {entry.read} from public pins of the "
        f"tag, UNCONFIRMED at the registry ({TABLE}); check it before `pulumi up` ({inspect})."
    )


def image_notes(settings: StackSettings) -> list[str]:
    """One note per image the stack runs: the serving image, and a GKE fleet's picker and metrics adapter."""
    notes = [_note("the vLLM image", settings.image_ref)]
    if isinstance(settings, GkeStack):
        if settings.gke.uses_gateway:
            notes.append(_note("the endpoint picker", PICKER_TAG))
        if settings.gke.metrics_adapter:
            notes.append(_note("the metrics adapter", METRICS_ADAPTER_TAG))
    return notes
