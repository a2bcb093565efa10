"""The policy pack imports nothing of the project outside policy/ (docs/architecture.md).

Why it matters: the pack runs under the Pulumi CLI's policy host with its own requirements.txt; a rule
module that reached into serving/ or stacks/ for a constant would tie the pack to the program's
dependencies and layout. What both must agree on is written on each side and checked by a test instead
(tests/serving/test_container.py for the vLLM port).
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT
from tests.repo.test_imports import PACKAGES
from tests.syntax_trees import READS_SYNTAX_TREES, nodes

pytestmark = READS_SYNTAX_TREES


def test_no_policy_module_imports_another_package_of_the_project() -> None:
    others = set(PACKAGES) - {"policy"}
    found = []
    for path in sorted((ROOT / "policy").rglob("*.py")):
        for node in nodes(path):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in others]
    assert found == []
