"""Only the argparse modules (`*/cli.py`, `__main__.py`) read an `argparse.Namespace`; the commands take plain,
typed arguments.

Why: `verify/advise/calibrate.py` took the Namespace, so its callers (a test, the MCP server, another command)
had to fake the command line to run it, and mypy saw every flag as `Any`. A command's typed function is what
the CLI, the MCP tools and the tests all call; the Namespace stays in the one module that parses it.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT
from tests.import_graph import project_sources
from tests.syntax_trees import READS_SYNTAX_TREES, nodes

pytestmark = READS_SYNTAX_TREES

ARGPARSE_MODULES = frozenset({"cli.py", "__main__.py"})


def names_the_namespace(tree_nodes: tuple[ast.AST, ...]) -> bool:
    """Whether the module spells `argparse.Namespace` or imports `Namespace` from argparse."""
    return any(
        (
            isinstance(node, ast.Attribute)
            and node.attr == "Namespace"
            and isinstance(node.value, ast.Name)
            and node.value.id == "argparse"
        )
        or (
            isinstance(node, ast.ImportFrom)
            and node.module == "argparse"
            and any(alias.name == "Namespace" for alias in node.names)
        )
        for node in tree_nodes
    )


def test_only_the_cli_modules_read_an_argparse_namespace() -> None:
    """Guards against a command that can only be called with a faked command line (and whose flags are `Any`)."""
    found = [
        str(path.relative_to(ROOT))
        for path in project_sources().values()
        if path.name not in ARGPARSE_MODULES and names_the_namespace(nodes(path))
    ]
    assert found == [], "build plain arguments from the Namespace in the cli module:\n" + "\n".join(found)


def test_the_check_sees_both_spellings() -> None:
    """Guards against a check that passes because it reads nothing."""
    assert names_the_namespace(tuple(ast.walk(ast.parse("import argparse\ndef f(a: argparse.Namespace): ..."))))
    assert names_the_namespace(tuple(ast.walk(ast.parse("from argparse import Namespace"))))
    assert not names_the_namespace(tuple(ast.walk(ast.parse("import argparse\nargparse.ArgumentParser()"))))
