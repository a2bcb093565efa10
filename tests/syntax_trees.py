"""The project's sources as syntax trees, parsed and walked once per test process.

Why a module: a dozen static checks read every source file (import layers and cycles, shape names, the
tool's spelling, who talks to Pulumi, the policy pack's imports). Each parsed and walked the same ~600
files again: some 750 `ast.parse` calls and 1.8 million `ast.iter_child_nodes` a run, several seconds of
CPU. Trees are shared: read them, never change them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest


def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree (the same object for every caller that reads the same text)."""
    return parsed_source(path.read_text(encoding="utf-8"))


@functools.cache
def parsed_source(source: str) -> ast.Module:
    return ast.parse(source)


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a source file's tree, in `ast.walk`'s order."""
    return source_nodes(path.read_text(encoding="utf-8"))


@functools.cache
def source_nodes(source: str) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(parsed_source(source)))


# The checks that read every module's tree run on one pytest-xdist worker (`--dist loadgroup`, as `make test`
# runs), so each tree is parsed and walked once per run rather than once per worker.
READS_SYNTAX_TREES = pytest.mark.xdist_group("syntax-trees")
