"""What the `promote` tool tells the agent: the promotion's own verdict, never a guess from its exit code.

Why: exit 1 means a gate refused the candidate (traffic untouched), or a later step failed and the share
was handed back, or handing it back failed too and the candidate still serves some users. "Traffic left
as it was" for all three was false for the last two. `verify promote --json` prints its verdict and what
Cloud Run routed when last read; the tool repeats exactly that, and says "unknown" when there is none
(killed at the time cap, crashed).
"""

from __future__ import annotations

import pydantic

from verify.promote.machine import PromotionReport, Verdict

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


def promotion_outcome(stdout: str) -> PromotionReport | None:
    """The report `verify promote --json` prints last, or None when it printed none."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            return PromotionReport.model_validate_json(line)
        except pydantic.ValidationError:
            if line.lstrip().startswith("{"):
                return None
            continue
    return None


def promotion_verdict(outcome: PromotionReport | None, exit_code: int, *, timed_out: bool) -> str:
    if outcome is None or outcome.verdict is None:
        why = "stopped at the time cap" if timed_out else f"exit {exit_code}, no verdict printed"
        return (
            f"outcome unknown ({why}): traffic may have moved; read what serves with the `status` tool "
            "before anything else"
        )
    text = _VERDICTS[outcome.verdict.value]
    if outcome.routed:
        split = ", ".join(f"{revision} {share}%" for revision, share in sorted(outcome.routed.items()))
        text += f"; Cloud Run routes {split}"
    elif outcome.verdict in {Verdict.NOT_HANDED_BACK, Verdict.ROLLBACK_FAILED}:
        text += "; what Cloud Run routes could not be read"
    return text
