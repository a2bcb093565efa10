"""Where a stack's file is found: the project folder, then `examples/`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from preview.stack_file import (
    StackFileError,
    available_stacks,
    example_stacks,
    read_stack_config,
    shipped_stacks,
    stack_file_path,
)
from tests.conftest import ROOT
from tests.preview_cli import run_preview


def _project_with_example(tmp_path: Path, name: str) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "Pulumi.l4.yaml", tmp_path / "examples" / f"Pulumi.{name}.yaml")
    return tmp_path


def test_an_example_stack_is_found_below_examples(tmp_path: Path) -> None:
    """`make preview STACK=<example>` must find a stack kept in examples/, not answer "no stack file"."""
    root = _project_with_example(tmp_path, "e4b-l4")
    assert stack_file_path(root, "e4b-l4") == root / "examples" / "Pulumi.e4b-l4.yaml"
    assert read_stack_config(root, "e4b-l4").stack == "e4b-l4"
    assert example_stacks(root) == ["e4b-l4"]
    assert shipped_stacks(root) == []
    assert available_stacks(root) == ["e4b-l4"]


def test_a_name_in_the_root_and_in_examples_is_refused(tmp_path: Path) -> None:
    """Two files for one name would make the preview show one and `pulumi up` deploy the other."""
    root = _project_with_example(tmp_path, "l4")
    shutil.copy(ROOT / "Pulumi.l4.yaml", root / "Pulumi.l4.yaml")
    with pytest.raises(StackFileError, match=r"two files, Pulumi\.l4\.yaml and examples/Pulumi\.l4\.yaml"):
        stack_file_path(root, "l4")


def test_an_unknown_stack_lists_the_examples_too(tmp_path: Path) -> None:
    """The error for a misspelt stack names every stack the user could have meant, examples included."""
    root = _project_with_example(tmp_path, "e4b-l4")
    with pytest.raises(StackFileError, match="stacks here: e4b-l4"):
        stack_file_path(root, "e4b")


def test_the_preview_command_plans_an_example_stack(tmp_path: Path) -> None:
    """The README's preview command works for an example as it does for a shipped stack."""
    root = _project_with_example(tmp_path, "copy-of-l4")
    result = run_preview("--stack", "copy-of-l4", root=root)
    assert result.returncode == 0, result.stderr
    assert "copy-of-l4" in result.stdout
