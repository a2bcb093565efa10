"""Every module of the project imports on its own, in any order: no cycle among the imports a module runs
when it is loaded.

Why: a cycle dodged by import order works until someone imports the modules the other way round (a new
CLI entry point, a test run alone), and then fails with a half-initialised module. The cycles are found
in the sources' import graph (tests/import_graph.py), which costs linear time in the number of modules;
importing each module alone in a fresh interpreter, as this test once did, cost the square of it.
"""

from __future__ import annotations

import importlib

import pytest

from tests.import_graph import PACKAGES, Edge, import_edges, load_time_cycles, project_sources
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES

__all__ = ["PACKAGES"]


def test_no_cycle_among_the_imports_that_run_at_load_time() -> None:
    """Guards against a module that imports only after another one did (a half-initialised module)."""
    edges = import_edges()
    cycles = load_time_cycles(edges)
    described = [
        " -> ".join(f"{edge.importer}:{edge.line}" for edge in edges if edge.load_time and edge.importer in cycle)
        for cycle in cycles
    ]
    assert cycles == [], "import cycles (module:line of each import in the cycle):\n" + "\n".join(described)


def test_the_cycle_finder_sees_a_cycle_and_ignores_lazy_imports() -> None:
    """Guards against a check that passes because it finds nothing: a cycle is reported, a lazy import is not."""
    cycle = (Edge("a", "b", 1, load_time=True), Edge("b", "c", 1, load_time=True), Edge("c", "a", 1, load_time=True))
    assert load_time_cycles(cycle) == [["a", "b", "c"]]
    lazy = (Edge("a", "b", 1, load_time=True), Edge("b", "a", 9, load_time=False))
    assert load_time_cycles(lazy) == []


def test_the_graph_reads_lazy_and_type_checking_imports_as_not_load_time() -> None:
    """Guards against a graph that misreads where an import runs (a false cycle, or a missed one)."""
    edges = {(edge.importer, edge.imported): edge.load_time for edge in import_edges()}
    # deploy/__init__.py imports each platform's module inside its arm of the settings match.
    assert edges[("deploy", "deploy.cloud_run")] is False
    assert edges[("deploy", "deploy.context")] is True


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_of_the_package_imports(package: str) -> None:
    """Guards against a module that cannot be imported at all (a name that moved, a missing dependency)."""
    for name in project_sources():
        if name.split(".")[0] == package and not name.endswith("__main__"):
            importlib.import_module(name)
