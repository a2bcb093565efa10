"""What pins a container image reference, for the policy pack and the stack settings alike.

Why here, standard library only: the policy pack runs in its own environment and imports nothing of
the project, while the settings and components (through serving/images.py) may import this module; one
rule keeps the two gates from disagreeing about which image reference names one build.
"""

from __future__ import annotations

import re

# Tags that name a moving target rather than a release.
FLOATING_TAGS = frozenset({"latest", "nightly", "main", "master", "dev", "edge", "stable"})
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
PINNED_HELP = "a release tag (e.g. vllm/vllm-openai:v0.32.0) or a digest (...@sha256:<64 hex>)"


def image_pin_problem(reference: str) -> str | None:
    """Why an image reference is not pinned, or None when it is."""
    name, at, digest = reference.strip().partition("@")
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
