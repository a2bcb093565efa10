"""The string constants of a module that are not docstrings: what a module says to users, not about itself.

Why a helper: the checks that read what users are told (shape names spelt outside their reader, the tool's
one name) scan the same thing, the strings a module prints or branches on; docstrings explain the code to
its readers and are left out. Read from the syntax tree: nothing is imported or run.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from tests.syntax_trees import source_nodes


def string_constants(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string constant in `source` (f-strings' literal parts too), docstrings aside."""
    return iter(_string_constants(source))


@functools.lru_cache(maxsize=4096)
def _string_constants(source: str) -> tuple[tuple[int, str], ...]:
    """Once per source text, from its one shared walk: several checks, and each of their parameters, scan the
    same project files."""
    docstrings: set[int] = set()
    strings: list[tuple[ast.Constant, str]] = []
    for node in source_nodes(source):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                strings.append((node, node.value))
        elif isinstance(node, _HAS_DOCSTRING) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return tuple((node.lineno, text) for node, text in strings if id(node) not in docstrings)


_HAS_DOCSTRING = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
