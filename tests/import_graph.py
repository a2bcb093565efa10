"""The project's import graph, read from the sources' syntax trees (nothing is imported, nothing is run).

Why static: the import-order test used to import every module alone in a fresh interpreter, a cost that
grew with the square of the module count (each module re-imported with everything it pulls in, 13-16 s
of CPU at 300 modules). What that test guarded against is a cycle among the imports a module runs when it
is loaded; those are in its source, so a graph of them finds every such cycle in a fraction of a second,
and the same graph checks the layers (tests/repo/test_layers.py).

Two kinds of edge, because they fail differently:
- load-time: an import at module level (inside `try`/`if` too, never under `if TYPE_CHECKING:`): it runs
  when the module is loaded, so a cycle of these is a half-initialised module for someone.
- any: every import, function bodies included: what a layer may depend on at all (a lazy import is
  still a dependency, it only moves the cost).
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT
from tests.syntax_trees import parsed

# Every package of the project, and the modules at the repository root that belong to it.
PACKAGES = (
    "stacks",
    "serving",
    "components",
    "deploy",
    "preview",
    "verify",
    "job_scripts",
    "policy",
    "gemma_mcp",
    "remote",
)


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    load_time: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def project_sources() -> dict[str, Path]:
    """Module name -> source file, for every module of every package (`__main__` modules included)."""
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], *, load_time: bool) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement under `body`, and whether it runs when the module is loaded."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    for statement in body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            found.append((statement, load_time))
        elif isinstance(statement, ast.If) and _is_type_checking(statement.test):
            found += _imports(statement.body, load_time=False)
            found += _imports(statement.orelse, load_time=load_time)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            found += _imports(statement.body, load_time=False)
        elif isinstance(statement, ast.ClassDef):
            found += _imports(statement.body, load_time=load_time)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                nested = getattr(statement, field, None)
                if isinstance(nested, list):
                    found += _imports([node for node in nested if isinstance(node, ast.stmt)], load_time=load_time)
            for handler in getattr(statement, "handlers", []):
                found += _imports(handler.body, load_time=load_time)
            if isinstance(statement, ast.Match):
                for case in statement.cases:
                    found += _imports(case.body, load_time=load_time)
    return found


def _targets(statement: ast.Import | ast.ImportFrom, importer: str, modules: set[str]) -> list[str]:
    """The project modules one import statement names (a submodule named by `from package import x` too)."""
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
    else:
        base = statement.module or ""
        if statement.level:  # relative imports are banned (ruff TID252), resolved anyway
            package = importer.split(".")[: -statement.level] if statement.level else []
            base = ".".join([*package, base] if base else package)
        names = [base, *(f"{base}.{alias.name}" for alias in statement.names)]
    return [name for name in names if name in modules]


@functools.cache
def import_edges() -> tuple[Edge, ...]:
    """Every import from one project module of another, with its line and whether it runs at load time."""
    sources = project_sources()
    modules = set(sources)
    edges: list[Edge] = []
    for importer, path in sources.items():
        tree = parsed(path)
        for statement, load_time in _imports(tree.body, load_time=True):
            edges += [
                Edge(importer, target, statement.lineno, load_time)
                for target in _targets(statement, importer, modules)
                if target != importer
            ]
    return tuple(edges)


def load_time_cycles(edges: tuple[Edge, ...]) -> list[list[str]]:
    """The cycles among load-time imports, one per strongly connected component (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.load_time:
            graph.setdefault(edge.importer, set()).add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph.get(node, ())):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


@dataclass(frozen=True)
class ExternalImport:
    importer: str
    top_level: str
    line: int


@functools.cache
def external_imports() -> tuple[ExternalImport, ...]:
    """Every import of a module outside the project and the standard library, lazy and type-only ones too,
    as the top-level name a distribution provides (`pulumi_policy`, `google`)."""
    sources = project_sources()
    local = {name.split(".")[0] for name in sources}
    found: list[ExternalImport] = []
    for importer, path in sources.items():
        for statement, _load_time in _imports(parsed(path).body, load_time=True):
            if isinstance(statement, ast.Import):
                names = [alias.name for alias in statement.names]
            else:
                names = [statement.module or ""] if statement.level == 0 else []
            found += [
                ExternalImport(importer, top, statement.lineno)
                for top in {name.split(".")[0] for name in names}
                if top and top not in local and top not in sys.stdlib_module_names
            ]
    return tuple(found)
