"""The workflows' stack lists and defaults (.ci/stack_matrix.py, deploy.yml, preview.yml, preview-comment.yml).

actionlint and zizmor (make lint) check the workflows are valid and safe; these tests check what a user
relies on: a push deploys nothing until DEPLOY_STACKS_ON_PUSH opts a stack in, a new stack file is
previewed and deployable without editing a workflow, and a fork's pull request gets the offline plan too.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def _matrix_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stack_matrix", ROOT / ".ci" / "stack_matrix.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stack_matrix"] = module
    spec.loader.exec_module(module)
    return module


matrix = _matrix_module()


def workflow(name: str) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    return loaded


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with two deployable stacks and one example."""
    for name in ("Pulumi.yaml", "Pulumi.l4.yaml", "Pulumi.tpu-v6e.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "Pulumi.gke-l4x4.yaml").write_text("config: {}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("on_push", ["", "[]", "  "])
def test_a_push_deploys_nothing_unless_stacks_are_opted_in(project: Path, on_push: str) -> None:
    """The deploy workflow deployed every stack, the TPU one included, on every push unless a variable said
    otherwise; unset or empty DEPLOY_STACKS_ON_PUSH now deploys nothing."""
    assert matrix.deploy_matrix("push", on_push=on_push, root=project) == []


def test_a_push_deploys_exactly_the_stacks_opted_in(project: Path) -> None:
    assert matrix.deploy_matrix("push", on_push='["l4"]', root=project) == ["l4"]


@pytest.mark.parametrize("on_push", ['["l5"]', '["gke-l4x4"]', "l4", '{"l4": true}'])
def test_a_stack_without_a_deployable_file_fails_the_run(project: Path, on_push: str) -> None:
    """A typo (or an example, which is never deployed) must fail loudly, not silently deploy nothing."""
    with pytest.raises(matrix.MatrixError):
        matrix.deploy_matrix("push", on_push=on_push, root=project)


def test_a_manual_run_deploys_the_named_stack_or_every_deployable_one(project: Path) -> None:
    """Hard-coded stack lists missed new stack files; the list is the files beside Pulumi.yaml."""
    assert matrix.deploy_matrix("workflow_dispatch", requested="all", root=project) == ["l4", "tpu-v6e"]
    assert matrix.deploy_matrix("workflow_dispatch", requested="tpu-v6e", root=project) == ["tpu-v6e"]
    (project / "Pulumi.new-stack.yaml").write_text("config: {}\n", encoding="utf-8")
    assert "new-stack" in matrix.deploy_matrix("workflow_dispatch", requested="all", root=project)
    with pytest.raises(matrix.MatrixError):
        matrix.deploy_matrix("workflow_dispatch", requested="l4; rm -rf /", root=project)


def test_previews_cover_every_stack_file_examples_included(project: Path) -> None:
    assert matrix.previewable(project) == ["gke-l4x4", "l4", "tpu-v6e"]
    assert matrix.deployable(project) == ["l4", "tpu-v6e"]


def test_the_command_line_prints_json_and_refuses_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert matrix.main(["deploy", "--event", "push", "--on-push", ""]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert matrix.main(["deploy", "--event", "push", "--on-push", '["no-such-stack"]']) == 2
    assert "no stack file" in capsys.readouterr().err


def test_no_workflow_hard_codes_the_stack_list() -> None:
    """Every matrix comes from the stack files (the stacks job's output), none from a typed list."""
    deploy, preview = workflow("deploy.yml"), workflow("preview.yml")
    assert deploy["jobs"]["deploy"]["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert preview["jobs"]["preview"]["strategy"]["matrix"]["stack"] == ("${{ fromJSON(needs.stacks.outputs.stacks) }}")
    assert deploy["jobs"]["deploy"]["if"] == "needs.stacks.outputs.stacks != '[]'"
    inputs = deploy[True]["workflow_dispatch"]["inputs"]["stack"]  # yaml reads the key `on` as True
    assert inputs["type"] == "string"


def test_a_forks_pull_request_gets_the_offline_plan_without_secrets() -> None:
    """Pull requests from forks got no plan at all, though the offline plan needs no secret."""
    job = workflow("preview.yml")["jobs"]["offline-plan"]
    text = yaml.safe_dump(job)
    assert "if" not in job  # runs for every pull request, forks included
    assert job["permissions"] == {"contents": "read"}
    assert "secrets." not in text
    assert "make -s preview" in text
    assert "GITHUB_STEP_SUMMARY" in text


def test_the_comment_workflow_never_runs_pull_request_code() -> None:
    """The comment is posted with a write token, so that job must only read the plan as data."""
    comment = workflow("preview-comment.yml")
    job = comment["jobs"]["comment"]
    uses = [step.get("uses", "") for step in job["steps"]]
    assert not any("checkout" in action for action in uses)
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "${{" not in runs  # every value reaches the shell through env, never pasted into it
    assert "head.sha" in runs  # the pull request named in the artifact must be the one previewed
