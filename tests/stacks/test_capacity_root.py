"""Every reader of a stack file plans its capacity against the project it was given, not the current folder.

Why it matters to a user: a stack's capacity.profile (a checkpoint's config.json) and the calibration
records are files of the project. The MCP server started by a client with no `cwd`, or `gemma-verify`
run from another folder, used to plan against the folder it happened to start in: a stack the preview
accepts was reported invalid ("capacity.profile: ... no such file"), or planned without its calibration.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gemma_mcp.stack_files import summarise
from preview.__main__ import main as preview_main
from preview.stack_file import read_stack_config
from serving.model_profiles import builtin_profile_files
from tests.conftest import ROOT
from tests.stacks.test_settings import long_form
from verify.ops.stack import load_ops_stack
from verify.stack_settings import load_stack_file

STACK = "l4"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose stack plans its own checkpoint from `profiles/config.json`, a path relative to it;
    every test runs from another folder."""
    folder = tmp_path / "project"
    (folder / "profiles").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, folder / name)
    (folder / "profiles" / "config.json").write_text(
        json.dumps(builtin_profile_files()["calibration-tiny-gemma4"].config), encoding="utf-8"
    )
    index = {"metadata": {"total_size": 5 * 10**9}}
    (folder / "profiles" / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    config = {key: _decoded(value) for key, value in long_form(read_stack_config(ROOT, STACK).values).items()}
    config["gemma-serving:model"]["path"] = "my-own-finetune"
    config["gemma-serving:vllm"]["maxModelLen"] = 4096
    config["gemma-serving:capacity"] = {"profile": "profiles/config.json"}
    (folder / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder


def _decoded(value: str) -> Any:
    return json.loads(value) if value[:1] in "{[" else value


def test_the_preview_plans_the_stack_from_its_profile(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m preview --root <project>`: the settings check and the capacity section read its profile."""
    assert preview_main(["--stack", STACK, "--root", str(project), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"]["weightBytes"] == 5 * 10**9


def test_the_mcp_server_calls_the_stack_valid(project: Path) -> None:
    """The `stacks` tool's summary (it refused this stack: the profile was looked for in the cwd)."""
    summary = summarise(project, STACK)
    assert summary.valid, summary.problems


def test_verify_reads_the_stack(project: Path) -> None:
    """`gemma-verify preflight/status/logs --stack` and `verify memory` read the same stack."""
    ops = load_ops_stack(STACK, root=project, project="my-project-123")
    assert ops.name == STACK
    loaded = load_stack_file(STACK, project)
    assert loaded.capacity.plan is not None
    assert loaded.capacity.plan.weight_bytes == 5 * 10**9
