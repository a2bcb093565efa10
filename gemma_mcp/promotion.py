"""What the `promote` tool tells the agent: the promotion's own verdict, never a guess from its exit code.

Why: exit 1 means a gate refused the candidate (traffic untouched), or a later step failed and the share
was handed back, or handing it back failed too and the candidate still serves some users. "Traffic left
as it was" for all three was false for the last two. `verify promote --json` prints its verdict and what
Cloud Run routed when last read; the tool repeats exactly that, and says "unknown" when there is none
(killed at the time cap, crashed).
"""

from __future__ import annotations

import json
from typing import Any

# The policy pack every `pulumi up` the server runs is given (the deploy workflow's own).
POLICY_PACK_DIR = "policy"

_VERDICTS = {
    "promoted": "promoted",
    "verified": "passed (first rollout: the candidate already serves all traffic; nothing moved)",
    "untouched": "not promoted; traffic untouched",
    "handed-back": "not promoted; a later step failed and the traffic was handed back",
    "not-handed-back": "NOT promoted, and the traffic was NOT handed back: the candidate may still serve users",
    "rolled-back": "rolled back",
    "rollback-failed": "rollback failed",
}


def promotion_outcome(stdout: str) -> dict[str, Any] | None:
    """The JSON document `verify promote --json` prints last, or None when it printed none."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict) and "verdict" in document:
            return document
        break
    return None


def promotion_verdict(outcome: dict[str, Any] | None, exit_code: int, *, timed_out: bool) -> str:
    if outcome is None or outcome.get("verdict") not in _VERDICTS:
        why = "stopped at the time cap" if timed_out else f"exit {exit_code}, no verdict printed"
        return (
            f"outcome unknown ({why}): traffic may have moved; read what serves with the `status` tool "
            "before anything else"
        )
    text = _VERDICTS[str(outcome["verdict"])]
    routed = outcome.get("routed")
    if isinstance(routed, dict) and routed:
        split = ", ".join(f"{revision} {share}%" for revision, share in sorted(routed.items()))
        text += f"; Cloud Run routes {split}"
    elif outcome.get("verdict") in {"not-handed-back", "rollback-failed"}:
        text += "; what Cloud Run routes could not be read"
    return text
