"""The cold-start gate of `verify promote`: the candidate's measured cold start within the stack's budget.

Why: a scale-to-zero stack's first user waits for a whole cold start, so a revision that starts slower
(a bigger checkpoint, a lost compile cache, a slower load mode) is a regression users meet. The budget is
`cloudRun.maxColdStartSeconds`; the measurement is `verify status`'s (verify/ops/coldstart.py); each
measurement is appended to a per-stack history (JSON lines), so the refusal can say what got slower.

A promote killed while appending leaves a torn last line; the history is only context for the refusal's words,
so a line that is not a whole record is skipped and said (it raised JSONDecodeError and stopped the gate), and
the next record starts on a line of its own rather than being glued to the torn one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verify.ops.coldstart import ColdStart

HISTORY_DIR = Path("cold-starts")


@dataclass(frozen=True)
class ColdStartGate:
    """Refuses a candidate whose cold start exceeds `budget_s`; records every measurement in `history`."""

    budget_s: int
    # revision -> its newest measured start (None: no start's lines found), or raises to say why it could not.
    measure: Callable[[str], ColdStart | None]
    history: Path | None = None
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    # Where the gate says what it skipped in the history (promote's own output).
    say: Callable[[str], None] = lambda _line: None

    def __call__(self, revision: str) -> str | None:
        """Why the candidate is refused, or None when its cold start fits the budget."""
        measured = self.measure(revision)
        if measured is None:
            return (
                f"the cold start of {revision} could not be measured (no start's lines in Cloud Logging; "
                "`gemma-verify status` shows why); cloudRun.maxColdStartSeconds needs a measurement"
            )
        # Fail closed: a measurement missing its ends, out of order or of another revision is no measurement.
        untrusted = measured.gate_problem(revision)
        if untrusted is not None:
            return (
                f"the cold start of {revision} cannot be trusted as measured ({untrusted}); "
                "cloudRun.maxColdStartSeconds needs a whole start of this revision (`gemma-verify status` shows it)"
            )
        previous, skipped = read_history(self.history)
        for line in skipped:
            self.say(f"cold-start history: {line}")
        self._record(revision, measured)
        total, slowest = measured.total_s, measured.slowest
        if total <= self.budget_s:
            return None
        before = ""
        if previous is not None:
            phases = previous.get("phases")
            was = phases.get(slowest.name) if isinstance(phases, dict) else None
            if isinstance(was, int | float):
                before = f"; it took {was:.0f} s for {previous.get('revision')}"
        return (
            f"the candidate {revision} took {total:.0f} s to start, over cloudRun.maxColdStartSeconds "
            f"{self.budget_s} s; the slowest phase is {slowest.name} ({slowest.seconds:.0f} s){before}"
        )

    def _record(self, revision: str, measured: ColdStart) -> None:
        if self.history is None:
            return
        self.history.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "measuredAt": self.clock().isoformat(),
            "revision": revision,
            "totalSeconds": round(measured.total_s, 3),
            "phases": {phase.name: round(phase.seconds, 3) for phase in measured.phases},
            "weightBytes": measured.weight_bytes,
            "budgetSeconds": self.budget_s,
        }
        # After a torn last line, a line of its own: glued to it, the new record would be torn too.
        lead = "" if _ends_a_line(self.history) else "\n"
        with self.history.open("a", encoding="utf-8") as handle:
            handle.write(lead + json.dumps(record) + "\n")


def history_path(project_dir: Path, stack: str) -> Path:
    """`<project>/cold-starts/<stack>.jsonl`: one line per measured candidate, oldest first."""
    return project_dir / HISTORY_DIR / f"{stack}.jsonl"


def _ends_a_line(path: Path) -> bool:
    """Whether ``path`` is missing, empty or ends with a newline (a whole last line)."""
    if not path.exists():
        return True
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return True
        handle.seek(size - 1)
        return handle.read(1) == b"\n"


def read_history(history: Path | None) -> tuple[dict[str, Any] | None, list[str]]:
    """The newest whole record of ``history`` (None when there is none), and a line for each newer line skipped
    because it is not one: torn by a killed promote, or not a JSON object."""
    if history is None or not history.exists():
        return None, []
    text = history.read_bytes().decode("utf-8", errors="replace")
    skipped: list[str] = []
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    for number, line in reversed(numbered):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            return record, skipped
        skipped.append(
            f"{history.name}:{number} is not a whole record (a promote stopped while writing it?); skipped, "
            "and the gate compares with the line before it"
        )
    return None, skipped


def gate_for_stack(
    stack: str, service_resource: str, project_dir: Path, *, say: Callable[[str], None] | None = None
) -> ColdStartGate | None:
    """The gate the stack file asks for (cloudRun.maxColdStartSeconds), measuring through Cloud Logging; else None."""
    from verify.ops.google import apis_from_environment  # noqa: PLC0415 - only when a budget is set
    from verify.ops.stack import CloudRunOpsStack, load_ops_stack  # noqa: PLC0415 - as above
    from verify.ops.status import cold_start_of  # noqa: PLC0415 - as above

    project = service_resource.split("/")[1]
    ops = load_ops_stack(stack, root=project_dir, project=project)
    if not isinstance(ops, CloudRunOpsStack) or ops.max_cold_start_seconds is None:
        return None

    def measure(revision: str) -> ColdStart | None:
        with apis_from_environment() as apis:
            return cold_start_of(ops, apis, revision)

    history = history_path(project_dir, stack)
    return ColdStartGate(
        budget_s=ops.max_cold_start_seconds, measure=measure, history=history, say=say or (lambda _line: None)
    )
