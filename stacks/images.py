"""Container image references that must be pinned.

Why: `:latest` and `:nightly` make two `pulumi up` runs of the same commit deploy different vLLM builds,
and Cloud Run resolves a tag only at deploy time; a release tag or a digest keeps a stack reproducible.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

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


def _require_pinned(reference: str) -> str:
    problem = image_pin_problem(reference)
    if problem:
        raise ValueError(problem)
    return reference


PinnedImage = Annotated[str, AfterValidator(_require_pinned)]
