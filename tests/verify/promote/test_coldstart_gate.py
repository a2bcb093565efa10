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
