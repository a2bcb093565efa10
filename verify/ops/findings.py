"""The shape every ops check reports in: one finding per thing checked, with the fix when it fails.

Why one shape for preflight's rows (and status/logs reuse the verdicts): the table, `--json` and an MCP
caller all read the same fields, and the exit code is derived from the findings in one place.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import pydantic

EXIT_OK = 0
EXIT_BLOCKED = 1
EXIT_CANNOT_CHECK = 2


class Verdict(enum.StrEnum):
    PASS = "pass"  # noqa: S105 - a verdict, not a password
    BLOCKER = "blocker"  # `pulumi up` would fail (or wait forever) because of this: exit 1
    UNCHECKED = "unchecked"  # could not be checked (API disabled for the check, no access): exit 2
    INFO = "info"  # worth knowing, never fails the command


class Finding(pydantic.BaseModel):
    """One checked item. `limit`/`usage`/`needed` are set for quotas, in `unit`."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    area: str
    item: str
    verdict: Verdict
    detail: str
    fix: str | None = None
    limit: float | None = None
    usage: float | None = None
    needed: float | None = None
    unit: str | None = None


def exit_code(findings: Iterable[Finding]) -> int:
    """1 when a blocker was found (definite news beats missing news), else 2 when something went unchecked."""
    verdicts = {finding.verdict for finding in findings}
    if Verdict.BLOCKER in verdicts:
        return EXIT_BLOCKED
    if Verdict.UNCHECKED in verdicts:
        return EXIT_CANNOT_CHECK
    return EXIT_OK
