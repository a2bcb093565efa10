"""Moving traffic between revisions: always through Pulumi, so its state says which revision serves.

Why Pulumi and not a direct Cloud Run `services.patch`: the traffic split is an input of the stack's
`cloudrunv2.Service`. Patched behind Pulumi's back, the next `pulumi up` would put it back (or, with a
refresh, adopt whatever it found); a user reading `pulumi stack output servingRevision` would read a
lie. So promotion sets the stack's rollout config (`gemma-serving:cloudRun.traffic.*`) for one
`pulumi up` of the checked-out program and removes it afterwards: the program exports
`servingRevision`/`previousRevision`, and every later `pulumi up` reads them back from the stack's own
state (a StackReference to itself, see `deploy/rollout_state.py`). Pulumi's state stays the one place that
says which revision serves, whether the next update runs in CI or on a laptop.

``TrafficShifter`` is the seam tests replace: they run the promotion state machine against a fake
Cloud Run API without the Pulumi CLI. The real one, `PulumiAutomationShifter`, lives in
verify/pulumi_gateway.py, the one module that talks to Pulumi; so the seam lives beside it, in verify's
base, and the gateway imports nothing of a command's package. The config keys a promotion writes are the
program's (serving/rollout_keys.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TrafficChange:
    """One traffic split to apply: ``serving_revision`` gets 100 - ``candidate_percent``, the candidate the rest."""

    serving_revision: str
    candidate_percent: int
    previous_revision: str | None
    reason: str

    def describe(self, candidate: str) -> str:
        if self.candidate_percent == 0 or candidate == self.serving_revision:
            return f"{self.serving_revision} 100%"
        return f"{self.serving_revision} {100 - self.candidate_percent}%, {candidate} {self.candidate_percent}%"


class TrafficShifter(Protocol):
    """Applies a traffic change and returns once the update finished (raising when it failed)."""

    def apply(self, change: TrafficChange) -> None: ...


class ShiftFailedError(RuntimeError):
    """The update that was to move traffic failed; Pulumi's state says what happened."""
