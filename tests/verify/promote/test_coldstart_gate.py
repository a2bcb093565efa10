"""`verify promote`'s cold-start gate: a candidate slower to start than cloudRun.maxColdStartSeconds is refused."""

from __future__ import annotations

import json
from pathlib import Path

from tests.verify.ops.coldstart_entries import log_entries
from tests.verify.ops.scenarios import ROOT
from tests.verify.promote import test_promote
from tests.verify.promote.fake_cloud_run import CANDIDATE, SERVICE, SERVING
from verify.ops.coldstart import ColdStart, Line, measure
from verify.ops.logs import page_lines
from verify.promote.coldstart_gate import ColdStartGate, gate_for_stack, history_path

# The promotion world of test_promote (fake Cloud Run, a vLLM-shaped candidate, a recording shifter).
world = test_promote.world


def real_start(name: str = "vllm-0.32.0-cpu-default-loader.log", revision: str = CANDIDATE) -> ColdStart:
    """The phases of a REAL vLLM 0.32.0 start (70 s in all; the slowest phase is engine start, 28 s)."""
    lines = page_lines({"entries": log_entries(name, revision=revision)})
    found = measure([Line(timestamp=x.timestamp, source=x.source, text=x.text) for x in lines])
    assert found is not None
    return found


def test_a_candidate_over_budget_is_refused_naming_the_slow_phase(tmp_path: Path) -> None:
    """The refusal says by how much and which phase to look at, so the user knows what got slow."""
    gate = ColdStartGate(budget_s=60, measure=lambda _revision: real_start(), history=tmp_path / "l4.jsonl")
    refused = gate(CANDIDATE)
    assert refused is not None
    assert "took 70 s to start, over cloudRun.maxColdStartSeconds 60 s" in refused
    assert "the slowest phase is engine start (28 s)" in refused


def test_a_candidate_within_budget_passes_and_is_recorded(tmp_path: Path) -> None:
    """Every measurement lands in the per-stack history, so a regression is visible next time."""
    history = tmp_path / "cold-starts" / "l4.jsonl"
    gate = ColdStartGate(budget_s=120, measure=lambda _revision: real_start(), history=history)
    assert gate(CANDIDATE) is None
    record = json.loads(history.read_text(encoding="utf-8").splitlines()[-1])
    assert record["revision"] == CANDIDATE
    assert record["totalSeconds"] == 70.0
    assert record["phases"]["weights"] == 0.0


def test_a_regression_names_what_the_phase_took_before(tmp_path: Path) -> None:
    """The second refusal compares the slow phase with the last recorded start of the same stack."""
    history = tmp_path / "l4.jsonl"
    ColdStartGate(
        budget_s=1000,
        measure=lambda _r: real_start("vllm-0.32.0-cpu-runai-streamer.log", "gemma-l4-vllm-older"),
        history=history,
    )("gemma-l4-vllm-older")
    refused = ColdStartGate(budget_s=60, measure=lambda _revision: real_start(), history=history)(CANDIDATE)
    assert refused is not None
    assert "it took 20 s for gemma-l4-vllm-older" in refused


def test_an_unmeasured_candidate_is_refused(tmp_path: Path) -> None:
    """A budget with no measurement is no gate: the candidate is refused, with where to look."""
    refused = ColdStartGate(budget_s=300, measure=lambda _revision: None, history=None)(CANDIDATE)
    assert refused is not None
    assert "could not be measured" in refused


def test_promote_over_budget_leaves_traffic_where_it_was(world: test_promote.World, tmp_path: Path) -> None:
    """Guards against a slow-starting revision reaching users: health passes, the cold-start gate refuses."""
    gate = ColdStartGate(budget_s=60, measure=lambda _revision: real_start(), history=tmp_path / "h.jsonl")

    code = world.promote(cold_start=gate)

    assert code == 1
    assert world.shifter.changes == []
    assert world.routed() == {SERVING: 100}
    assert not any("gate 2/2" in line for line in world.lines)  # no bench after the refusal
    assert any("the slowest phase is engine start" in line for line in world.lines)


def test_the_budget_comes_from_the_stack_file() -> None:
    """cloudRun.maxColdStartSeconds turns the gate on; a stack without it is not gated."""
    gate = gate_for_stack("l4-stream", SERVICE, ROOT)
    assert gate is not None
    assert gate.budget_s == 300
    assert gate.history == history_path(ROOT, "l4-stream")
    assert gate_for_stack("l4", SERVICE, ROOT) is None


def test_a_torn_last_line_is_skipped_said_and_not_glued_to(tmp_path: Path) -> None:
    """Red team: a promote killed while appending left half a record as the history's last line, and the next
    promote's gate raised JSONDecodeError instead of judging the candidate. The torn line is skipped (the record
    before it is what the refusal compares with), said on promote's output, and the new record gets its own line."""
    history = tmp_path / "l4.jsonl"
    ColdStartGate(
        budget_s=1000,
        measure=lambda _r: real_start("vllm-0.32.0-cpu-runai-streamer.log", "gemma-l4-vllm-older"),
        history=history,
    )("gemma-l4-vllm-older")
    whole = history.read_text(encoding="utf-8")
    history.write_text(whole + whole[: len(whole) // 2], encoding="utf-8")  # killed halfway through a line
    said: list[str] = []
    refused = ColdStartGate(budget_s=60, measure=lambda _r: real_start(), history=history, say=said.append)(CANDIDATE)
    assert refused is not None
    assert "it took 20 s for gemma-l4-vllm-older" in refused  # judged, against the last whole record
    (line,) = said
    assert line.startswith("cold-start history: l4.jsonl:2 is not a whole record (a promote stopped while writing")
    lines = history.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    assert json.loads(lines[-1])["revision"] == CANDIDATE


def test_a_history_of_nothing_but_torn_or_foreign_lines_compares_with_nothing(tmp_path: Path) -> None:
    """A history holding only a torn line, a JSON list and bytes that are not UTF-8 still lets the gate judge."""
    history = tmp_path / "l4.jsonl"
    history.write_bytes(b'{"revision": "gemma-l4-vllm-0\n[1, 2]\n\xff\xfe{"phases": \n')
    said: list[str] = []
    refused = ColdStartGate(budget_s=60, measure=lambda _r: real_start(), history=history, say=said.append)(CANDIDATE)
    assert refused is not None
    assert "took 70 s to start" in refused
    assert "it took" not in refused
    assert [line.split(" is not")[0] for line in said] == [
        "cold-start history: l4.jsonl:3",
        "cold-start history: l4.jsonl:2",
        "cold-start history: l4.jsonl:1",
    ]
    wired = gate_for_stack("l4-stream", SERVICE, ROOT, say=said.append)  # promote's own output, as run.py passes
    assert wired is not None
    assert wired.say == said.append
