"""The cold-start gate fails closed: a start it cannot trust as a whole is refused, never passed.

Red team: the gate passed milestones with identical timestamps, a start whose first timestamps were missing
(1,210 s measured as 310 s), the lines of another revision, and a forged start/probe pair a container
printed on stdout. Each is reproduced on a REAL vLLM 0.32.0 start's lines (fixtures/coldstart) and refused.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console

from tests.verify.ops.coldstart_entries import INSTANCE_START, PROBE_PASSED, log_entries
from verify.ops.coldstart import ColdStart, Line, measure
from verify.ops.coldstart_render import cold_start_table
from verify.ops.logs import page_lines
from verify.promote.coldstart_gate import ColdStartGate

REVISION = "gemma-l4-vllm-candidate"
REAL = "vllm-0.32.0-cpu-default-loader.log"


def measured(entries: list[dict[str, Any]]) -> ColdStart:
    lines = page_lines({"entries": entries})
    found = measure([Line(timestamp=x.timestamp, source=x.source, text=x.text, log=x.log) for x in lines])
    assert found is not None
    return found


def gate(entries: list[dict[str, Any]], budget_s: int = 600) -> str | None:
    return ColdStartGate(budget_s=budget_s, measure=lambda _revision: measured(entries), history=None)(REVISION)


def test_the_real_start_passes_when_whole() -> None:
    """The control: the real 70 s start, both ends from Cloud Run's system log, passes a 600 s budget."""
    assert gate(log_entries(REAL, revision=REVISION)) is None


def test_a_start_without_its_first_milestones_is_not_measured_short() -> None:
    """Without the instance-start and vLLM's first line, the phases start at 'Starting to load model': the
    total is a lower bound (1,210 s read as 310 s); the gate refuses instead of passing it."""
    entries = [
        entry
        for entry in log_entries(REAL, revision=REVISION, instance_start_before_s=None)
        if "non-default args" not in entry["textPayload"]
    ]
    refused = gate(entries)
    assert refused is not None
    assert "first milestone (instance start) is not in the logs" in refused


def test_a_start_without_its_probe_is_refused() -> None:
    refused = gate(log_entries(REAL, revision=REVISION, probe_after_s=None))
    assert refused is not None
    assert "last milestone (first passing probe)" in refused


def test_identical_timestamps_are_refused() -> None:
    """Every milestone at one instant made a 0 s start that passes any budget."""
    entries = log_entries(REAL, revision=REVISION)
    for entry in entries:
        entry["timestamp"] = "2026-11-26T07:00:00.000000Z"
    refused = gate(entries)
    assert refused is not None
    assert "identical timestamps" in refused


def test_milestones_out_of_order_are_refused() -> None:
    entries = log_entries(REAL, revision=REVISION)
    probe = next(entry for entry in entries if entry["textPayload"] == PROBE_PASSED)
    first = datetime.fromisoformat(entries[0]["timestamp"].replace("Z", "+00:00"))
    probe["timestamp"] = (first + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    refused = gate(entries)
    assert refused is not None
    assert "is logged before" in refused


def test_lines_of_another_revision_are_refused() -> None:
    """The candidate's gate measured from another revision's start passes a revision that never started."""
    refused = gate(log_entries(REAL, revision="gemma-l4-vllm-older"))
    assert refused is not None
    assert "not of gemma-l4-vllm-candidate" in refused


def test_mixed_revisions_leave_the_others_out_and_say_so() -> None:
    ours = log_entries(REAL, revision=REVISION)
    theirs = [
        dict(entry, resource={"type": "cloud_run_revision", "labels": {"revision_name": "other"}})
        for entry in ours
        if "Starting to load model" in entry["textPayload"] or entry["textPayload"] == PROBE_PASSED
    ]
    mixed = [ours[0], *theirs, *ours[1:]]
    found = measured(mixed)
    assert found.source == REVISION
    assert any("lines of other" in problem for problem in found.problems)
    assert gate(mixed) is not None


def test_a_forged_start_and_probe_on_stdout_are_left_out() -> None:
    """A container printing 'Starting new instance' and 'STARTUP HTTP probe succeeded' one second apart made
    a 1 s start. Cloud Run's own milestones count only from its system log: the forged pair is left out, the
    start has no ends, and the gate refuses."""
    vllm_only = log_entries(REAL, revision=REVISION, instance_start_before_s=None, probe_after_s=None)
    when = datetime(2026, 11, 26, 7, 14, tzinfo=UTC)
    forged = []
    for offset, text in ((0, INSTANCE_START), (1, PROBE_PASSED)):
        forged.append(
            dict(
                vllm_only[0],
                textPayload=text,
                timestamp=(when + timedelta(seconds=offset)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            )
        )
    found = measured(vllm_only + forged)
    assert any("not Cloud Run's system log" in problem for problem in found.problems)
    refused = gate(vllm_only + forged)
    assert refused is not None
    assert "cannot be trusted" in refused


def test_status_says_when_a_start_is_partial_or_holds_refused_lines() -> None:
    """`verify status` shows the same start: a lower bound when its first lines are missing, and the lines it
    left out (here Cloud Run's milestones printed on stderr)."""
    entries = [
        dict(entry, logName="projects/p1/logs/run.googleapis.com%2Fstderr")
        for entry in log_entries(REAL, revision=REVISION)
        if "non-default args" not in entry["textPayload"]
    ]
    out = io.StringIO()
    Console(file=out, width=300, color_system=None).print(cold_start_table(measured(entries)))
    printed = out.getvalue()
    assert "the total is a lower bound" in printed
    assert "not a whole start" in printed
    assert "not Cloud Run's system log" in printed
