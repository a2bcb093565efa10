"""Byte units have one definition (serving/units.py), and every module imports it.

Why: `GIB` was typed seven times (`1 << 30`, `2**30`, `1024**3`) and `GB` beside it; a module that spells a
GiB as `10**9` (or a GB as `2**30`) reports every memory figure 7 % off, and no test of a single module would
notice. The check reads the syntax trees, so it costs nothing.
"""

from __future__ import annotations

import ast

from serving.units import GB, GIB, KIB, MB, MIB
from tests.conftest import ROOT
from tests.import_graph import project_sources
from tests.syntax_trees import READS_SYNTAX_TREES, parsed

pytestmark = READS_SYNTAX_TREES

UNIT_NAMES = frozenset({"KIB", "MIB", "GIB", "TIB", "KB", "MB", "GB", "TB"})
THE_DEFINITION = ROOT / "serving" / "units.py"


def unit_definitions(tree: ast.Module) -> list[tuple[str, int]]:
    """(name, line) of each module-level assignment to a byte unit's name."""
    found = []
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        found += [(t.id, statement.lineno) for t in targets if isinstance(t, ast.Name) and t.id in UNIT_NAMES]
    return found


def test_no_module_but_serving_units_defines_a_byte_unit() -> None:
    """Guards against a second GIB (or GB) that drifts from the first: memory figures off by 7 %."""
    found = [
        f"{path.relative_to(ROOT)}:{line} defines {name}"
        for path in project_sources().values()
        if path != THE_DEFINITION
        for name, line in unit_definitions(parsed(path))
    ]
    assert found == [], "import byte units from serving.units:\n" + "\n".join(found)


def test_the_check_sees_a_planted_definition() -> None:
    """Guards against a check that passes because it reads nothing."""
    planted = ast.parse("import math\nGIB = 1 << 30\nMB: int = 10**6\ndef f() -> None:\n    GB = 1\n")
    assert unit_definitions(planted) == [("GIB", 2), ("MB", 3)]
    assert unit_definitions(parsed(THE_DEFINITION)) != []


def test_the_units_are_the_binary_and_decimal_ones() -> None:
    """Guards against a unit typed wrong once, now wrong everywhere (a GiB of 10**9 bytes)."""
    assert (KIB, MIB, GIB) == (1024, 1024**2, 1024**3)
    assert (MB, GB) == (1000**2, 1000**3)
