"""A pinned container image reference, as a settings type (the rule itself: policy/image_pins.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from policy.image_pins import image_pin_problem


def _require_pinned(reference: str) -> str:
    problem = image_pin_problem(reference)
    if problem:
        raise ValueError(problem)
    return reference


PinnedImage = Annotated[str, AfterValidator(_require_pinned)]
