"""A pinned revision must be a real commit of the repo it is pinned for.

Why: the examples shipped an all-zero "placeholder" commit that previewed cleanly and failed only in the
import job at `pulumi up`; and a stack copied from `rtx6000` and turned into a 31B kept the 12B's commits
on the 31B repos. A placeholder is refused outright; a commit the catalog records for another repo is
refused naming both repos (the catalog's pins: serving/catalog, `pins` of each variant and drafter).
"""

from __future__ import annotations

import re

from serving.catalog import pins_of, repos_pinning
from serving.gcp_names import COMMIT_ID

# What `git log --oneline` and the Hub's history page show: the same commit, abbreviated.
_SHORT_COMMIT = re.compile(r"^[0-9a-f]{7,39}$")
_HEX = "0123456789abcdef"


def is_placeholder(revision: str) -> bool:
    """A 40-hex string nobody got from a commit history: one digit repeated, a short pattern repeated
    (`deadbeef` x 5), or a run of consecutive hex digits (`0123...`)."""
    value = revision.lower()
    for period in range(1, 9):
        if len(value) % period == 0 and value == value[:period] * (len(value) // period):
            return True
    return value in _HEX * 4


def revision_problem(key: str, repo: str, revision: object) -> str | None:
    """What is wrong with `revision` as the pinned commit of `repo`, under the key the stack file wrote."""
    if not isinstance(revision, str):
        return (
            f"{key}: required with model.id: the 40-hex commit of {repo} to serve (copy it from the repo's commit "
            "history)"
        )
    if _SHORT_COMMIT.match(revision):
        return (
            f"{key}: {revision!r} is a short commit id ({len(revision)} of 40 hex digits); give the full 40-hex "
            f"commit of {repo}, which names exactly one commit (copy it from the repo's commit history)"
        )
    if not COMMIT_ID.match(revision):
        return (
            f"{key}: {revision!r} is not a commit id: a branch or tag such as 'main' can move and change the "
            f"weights under a running stack; give the 40-hex commit of {repo} from its commit history"
        )
    if is_placeholder(revision):
        return f"{key}: {revision!r} is a placeholder, not a commit of {repo}; {_what_to_write(repo)}"
    owners = repos_pinning(revision)
    if owners and repo not in owners:
        other, pin = next(iter(owners.items()))
        return (
            f"{key}: {revision} is a commit of {other} (the catalog's pin: {pin.source}), not of {repo}: a stack "
            f"copied from another model keeps that model's pin; {_what_to_write(repo)}"
        )
    return None


def _what_to_write(repo: str) -> str:
    known = [pin.revision for pin in pins_of(repo)]
    hint = f" (the catalog records {', '.join(known)} as pinned in public)" if known else ""
    return f"write the 40-hex commit of {repo} you reviewed on the Hub{hint}"
