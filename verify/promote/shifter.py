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
Cloud Run API without the Pulumi CLI.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from verify import UsageError

CONFIG_NAMESPACE = "gemma-serving"
# The keys the program reads (stacks/cloud_run.py, TrafficSettings); path syntax for `pulumi config set --path`.
SERVING_REVISION_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.servingRevision"
PREVIOUS_REVISION_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.previousRevision"
CANDIDATE_PERCENT_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.candidatePercent"
# The id only promotion's own `pulumi up` carries (in PROMOTION_RUN_ENV too): keys a killed promotion leaves
# behind are inert for any other update (deploy/rollout_state.py, obeyed_traffic).
PROMOTION_RUN_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.promotionRun"
PROMOTION_RUN_ENV = "GEMMA_PROMOTION_RUN"


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


class PulumiAutomationShifter:
    """Runs `pulumi up` for the stack through the Automation API with the change as stack config.

    ``policy_packs`` are passed to every update, like the deploy workflow's `pulumi up`.
    """

    def __init__(
        self,
        stack: str,
        *,
        work_dir: Path,
        policy_packs: Sequence[str] = (),
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self._stack_name = stack
        self._work_dir = work_dir
        self._policy_packs = list(policy_packs)
        self._on_output = on_output or print_to_stderr

    def apply(self, change: TrafficChange) -> None:
        from pulumi import automation as auto  # noqa: PLC0415 - the CLI is needed only when traffic moves

        run_id = secrets.token_hex(16)
        try:
            stack = auto.select_stack(
                stack_name=self._stack_name,
                work_dir=str(self._work_dir),
                opts=auto.LocalWorkspaceOptions(env_vars={PROMOTION_RUN_ENV: run_id}),
            )
        except (auto.CommandError, FileNotFoundError) as exc:
            raise UsageError(
                f"cannot select stack {self._stack_name!r} with the Pulumi CLI ({exc}); promotion moves traffic "
                "with `pulumi up`, so it needs the CLI logged in to the stack's backend"
            ) from None
        config = {
            SERVING_REVISION_KEY: auto.ConfigValue(change.serving_revision),
            CANDIDATE_PERCENT_KEY: auto.ConfigValue(str(change.candidate_percent)),
            PROMOTION_RUN_KEY: auto.ConfigValue(run_id),
        }
        if change.previous_revision is not None:
            config[PREVIOUS_REVISION_KEY] = auto.ConfigValue(change.previous_revision)
        keys = list(config)
        try:
            # Killed anywhere from here on (SIGKILL, a cancelled job), the keys stay behind but stay inert.
            stack.set_all_config(config, path=True)
            stack.up(
                message=f"verify promote: {change.reason}",
                on_output=self._on_output,
                policy_packs=self._policy_packs or None,
            )
        except auto.CommandError as exc:
            raise ShiftFailedError(f"`pulumi up` failed: {exc}") from None
        finally:
            # The update's outputs carry the split forward; the keys are removed whatever happened.
            with contextlib.suppress(auto.CommandError):
                stack.remove_all_config(keys, path=True)


def print_to_stderr(line: str) -> None:
    print(line, end="" if line.endswith("\n") else "\n", file=sys.stderr)
