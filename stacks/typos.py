"""A misspelt key is one mistake, not two: fold "required but not set" into the typo that caused it.

Why: `maxNumSeq: 64` used to print both "maxNumSeq: unknown key" and "maxNumSeqs: required but not
set"; the second line sends a reader looking for a setting they did write. When an unknown key sits
next to a missing required one it closely resembles, only the typo is reported, with the suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic_core import ErrorDetails


def fold_typos(errors: Sequence[ErrorDetails]) -> tuple[list[ErrorDetails], dict[tuple[Any, ...], str]]:
    """The errors without the "missing" ones a sibling typo explains, and for each such typo's location
    the key it was meant to be."""
    missing = {tuple(e["loc"]): e for e in errors if e["type"] == "missing"}
    meant: dict[tuple[Any, ...], str] = {}
    for error in errors:
        if error["type"] != "extra_forbidden" or not error["loc"]:
            continue
        loc = tuple(error["loc"])
        siblings = [str(m[-1]) for m in missing if m[:-1] == loc[:-1]]
        close = difflib.get_close_matches(str(loc[-1]), siblings, n=1, cutoff=0.75)
        if close:
            meant[loc] = close[0]
    explained = {(*loc[:-1], name) for loc, name in meant.items()}
    kept = [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"]) in explained)]
    return kept, meant
