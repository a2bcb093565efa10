"""No circle among the stacks/ modules, counting every import: type-only and lazy ones too.

Why: the settings import the rules they run, and four of them (apis, capacity, catalog checks, the GKE
rules) imported the settings back for their types: a circle that load-time import checks do not see
(tests/repo/test_imports.py), but that ties every rule to the whole hub, so no rule can be read, tested or moved
without it. Each rule now takes the blocks it reads (stacks/model_settings.py) or a protocol of them.
"""

from __future__ import annotations

from tests.import_graph import Edge, import_edges, load_time_cycles
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES


def _stacks_edges() -> tuple[Edge, ...]:
    """Every import from one stacks/ module of another, as if each ran at load time."""
    return tuple(
        Edge(edge.importer, edge.imported, edge.line, load_time=True)
        for edge in import_edges()
        if edge.importer.startswith("stacks") and edge.imported.startswith("stacks")
    )


def test_no_circle_among_the_stacks_modules() -> None:
    """A rule that imports the settings hub for its types cannot be read or moved apart from it."""
    edges = _stacks_edges()
    cycles = load_time_cycles(edges)
    described = [
        " -> ".join(f"{edge.importer}:{edge.line} imports {edge.imported}" for edge in edges if edge.importer in cycle)
        for cycle in cycles
    ]
    assert cycles == [], "circles among stacks/ modules:\n" + "\n".join(described)


def test_the_check_sees_a_type_only_import() -> None:
    """The check above must count type-only imports: every import is an edge."""
    edges = {(edge.importer, edge.imported) for edge in _stacks_edges()}
    assert ("stacks.stack_base", "stacks.capacity") in edges
    assert ("stacks.capacity", "stacks.model_settings") in edges  # imported for its types only
