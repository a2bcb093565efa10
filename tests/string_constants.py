"""The string constants of a module that are not docstrings: what a module says to users, not about itself.

Why a helper: the checks that read what users are told (shape names spelt outside their reader, the tool's
one name) scan the same thing, the strings a module prints or branches on; docstrings explain the code to
its readers and are left out. Read from the syntax tree: nothing is imported or run.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def string_constants(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string constant in `source` (f-strings' literal parts too), docstrings aside."""
    return iter(_string_constants(source))


@functools.lru_cache(maxsize=4096)
def _string_constants(source: str) -> tuple[tuple[int, str], ...]:
    """Once per source text: several checks, and each of their parameters, scan the same project files."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return tuple(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    )
