"""Exactly one module of the project talks to Pulumi: verify/pulumi_gateway.py.

Why: Pulumi was called four ways (two subprocesses, one without the other's advice when the CLI was
missing, two Automation API paths with their own policy-pack handling); a fifth caller would bring back a
missing-CLI traceback or an update that skips the policy pack. The sources are scanned (their syntax
trees, not their text, so a docstring naming `pulumi.automation` does not count).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tests.conftest import ROOT
from tests.repo.test_imports import PACKAGES
from tests.syntax_trees import READS_SYNTAX_TREES, nodes

pytestmark = READS_SYNTAX_TREES

GATEWAY = "verify/pulumi_gateway.py"


def _talks_to_pulumi(walked: Iterable[ast.AST]) -> bool:
    """Whether any of a tree's nodes imports the Automation API or starts an argument list with the CLI."""
    for node in walked:
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.startswith("pulumi.automation"):
                return True
            if node.module == "pulumi" and any(alias.name == "automation" for alias in node.names):
                return True
        if isinstance(node, ast.Import) and any(alias.name.startswith("pulumi.automation") for alias in node.names):
            return True
        # An argument list that starts with the CLI: ["pulumi", ...] or ("pulumi", ...).
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "pulumi":
                return True
    return False


def pulumi_callers() -> list[str]:
    sources = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    sources += sorted(ROOT.glob("*.py"))
    return [str(path.relative_to(ROOT)) for path in sources if _talks_to_pulumi(nodes(path))]


def test_only_the_gateway_imports_the_automation_api_or_runs_the_pulumi_cli() -> None:
    """Guards against a new reader or writer of a stack that bypasses the gateway (and its advice and policy)."""
    assert pulumi_callers() == [GATEWAY]


def test_the_scan_sees_both_ways_of_calling_pulumi() -> None:
    """Guards against a scan that passes because it recognises nothing."""
    assert _talks_to_pulumi(ast.walk(ast.parse("from pulumi import automation as auto")))
    assert _talks_to_pulumi(ast.walk(ast.parse("import pulumi.automation")))
    assert _talks_to_pulumi(ast.walk(ast.parse("run(['pulumi', 'stack', 'output'])")))
    assert not _talks_to_pulumi(ast.walk(ast.parse('"""pulumi.automation in a docstring"""\nimport pulumi')))
