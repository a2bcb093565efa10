"""The verify tool has one name users read: `gemma-verify`, in the plan, in messages and in the docs.

Why: the docs spelt it three ways (`gemma-verify status`, `verify status`, `python -m verify status`) and
the plan printed `python -m verify` and `verify promote`, so a user could not tell whether these were
three tools, and `verify status` is not a command a shell knows. What a user reads comes from string
constants of the code (the plan's notes and warnings, error messages) and from the docs; this reads both.
Docstrings explain the code to its readers and are not scanned; verify may prefix its own lines with the
subcommand (`verify promote: ...`), which names where a line comes from, not a command to type.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.string_constants import string_constants
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES

SUBCOMMANDS = "status|health|bench|promote|preflight|logs|memory|models|query|metrics|alerts|advise|adapters|compare"
# A command to type, in backticks, without the tool's name; or the module run by hand.
COMMAND = re.compile(r"(?<![\w-])`verify (?=[a-z-])|python -m verify (?=[a-z])")
# In what the plan prints, any mention of a subcommand without the tool's name.
BARE = re.compile(r"(?<![\w/.`-])verify (?=(?:" + SUBCOMMANDS + r")\b)")
PLAN_PACKAGES = ("serving", "stacks", "deploy", "components", "preview", "policy")
READER_PACKAGES = ("verify", "gemma_mcp", "remote")
# Docs that may name `python -m verify`, and why.
PYTHON_M_ALLOWED = {
    "docs/benchmarking.md": "the bench job's container runs `python -m verify bench task` (no console script there)"
}


def misspelt(source: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    """`line: text` of each string constant (docstrings aside) that spells the command another way."""
    return [
        f"{line}: {text.strip()[:80]!r}"
        for line, text in string_constants(source)
        if any(pattern.search(text) for pattern in patterns)
    ]


def _modules(packages: tuple[str, ...]) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(
    ("packages", "patterns"), [(PLAN_PACKAGES, (COMMAND, BARE)), (READER_PACKAGES, (COMMAND,))], ids=["plan", "readers"]
)
def test_messages_name_the_tool_gemma_verify(packages: tuple[str, ...], patterns: tuple[re.Pattern[str], ...]) -> None:
    """Guards against a plan note or an error message that tells users to run a command no shell knows."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _modules(packages)
        for line in misspelt(path.read_text(), patterns)
    ]
    assert found == []


def test_docs_name_the_tool_gemma_verify() -> None:
    """Guards against docs that spell the same command two ways (`verify status`, `gemma-verify status`)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        relative = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = COMMAND.search(line)
            if match and not (match.group().startswith("python") and relative in PYTHON_M_ALLOWED):
                found.append(f"{relative}:{number}: {line.strip()[:80]}")
    assert found == []


def test_the_scan_finds_each_spelling() -> None:
    """Guards against a check that passes because its patterns match nothing."""
    source = (
        'A = "run `verify status` now"\nB = "python -m verify health --url x"\nC = "then verify promote moves it"\n'
    )
    assert len(misspelt(source, (COMMAND,))) == 2
    assert len(misspelt(source, (COMMAND, BARE))) == 3
    assert misspelt('D = "run `gemma-verify status`; verify promote: FAILED"\n', (COMMAND,)) == []
