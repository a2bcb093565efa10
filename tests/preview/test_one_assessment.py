"""The capacity planner runs once per run: the loader's verdict is the one every reader shows.

Why it matters to a user: a preview used to plan the same stack three times (its own settings check, the
program's loader, the program's warnings) and a fourth for its capacity section. Each was a chance to read
the project's files from another folder (the loader planned against the current directory, the preview
against --root), so the verdict that refused a stack and the one the preview printed could disagree.
"""

from __future__ import annotations

import pytest

import stacks.capacity
from preview.__main__ import main as preview_main
from preview.capture import run_program
from serving.planner import CapacityPlan, PlanInputs, plan_capacity
from tests.conftest import ROOT, stack_config


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[PlanInputs]:
    """Every call of the planner's entry point (stacks.capacity calls serving.planner.plan_capacity)."""
    calls: list[PlanInputs] = []

    def counting(inputs: PlanInputs) -> CapacityPlan:
        calls.append(inputs)
        return plan_capacity(inputs)

    monkeypatch.setattr(stacks.capacity, "plan_capacity", counting)
    return calls


@pytest.mark.parametrize("plan_format", ["json", "text"])
def test_a_preview_assesses_capacity_once(
    planned: list[PlanInputs], plan_format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m preview`: the settings check, the program's warnings and the capacity section share one plan."""
    assert preview_main(["--stack", "l4", "--format", plan_format, "--root", str(ROOT)]) == 0
    printed = capsys.readouterr().out
    assert "capacity" in printed
    assert len(planned) == 1


def test_the_program_assesses_capacity_once(planned: list[PlanInputs]) -> None:
    """The program alone (as `pulumi preview`/`up` run it): the loader's verdict also gives the warnings."""
    config = stack_config("rtx6000")
    program = ROOT / "__main__.py"
    capture = run_program(program, project=config.project, stack="rtx6000", config=config.values, secret_keys=[])
    assert capture.resources
    assert len(planned) == 1
