"""No project module imports another project module's private name (`from verify.ops.logs import _entries`).

Why: a leading underscore tells the module's next editor "nothing outside uses this; rename or change it
freely". Nine imports broke that promise (the MCP tools borrowed `tools_verify`'s `_report`, `verify memory`
read `verify logs`' `_entries`, the GKE settings `stacks.tpu`'s `_cidr`), so a change that looked local broke
a command nobody was editing. A helper two modules share is public, in the module it belongs to. Importing a
public name under a private alias (`import_helper as _helper`) is fine: the contract is the public name.
Third-party SDKs' private modules (`pulumi_gcp._utilities`) are outside this check: the project cannot make
them public, and each such import says why it is there.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT
from tests.import_graph import PACKAGES, project_sources
from tests.syntax_trees import READS_SYNTAX_TREES, parsed

pytestmark = READS_SYNTAX_TREES


def is_private(name: str) -> bool:
    """`_name` (and `_Name`), not a dunder (`__version__`, `__main__`)."""
    return name.startswith("_") and not name.startswith("__")


def private_imports(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    """(line, what) for each import, anywhere in the tree (function bodies and `TYPE_CHECKING` too), of a private
    name or module of the project from another module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name)
                for alias in node.names
                if alias.name.split(".")[0] in PACKAGES and any(is_private(part) for part in alias.name.split("."))
            ]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:  # relative imports are banned (ruff TID252); resolved anyway
                source = ".".join([*module.split(".")[: -node.level], *([source] if source else [])])
            if source.split(".")[0] not in PACKAGES or source == module:
                continue
            found += [
                (node.lineno, f"{source}.{alias.name}")
                for alias in node.names
                if is_private(alias.name) or any(is_private(part) for part in source.split("."))
            ]
    return found


def test_no_project_module_imports_another_modules_private_name() -> None:
    """Guards against a "private" helper that another module depends on: renaming it breaks a command nobody
    was editing, and the underscore told the editor it was safe."""
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {what}"
        for module, path in project_sources().items()
        for line, what in private_imports(parsed(path), module)
    ]
    assert found == [], "make the shared helper public, in the module it belongs to:\n" + "\n".join(found)


def test_the_check_sees_each_kind_of_private_import() -> None:
    """Guards against a check that passes because it reads nothing: each planted private import is seen, the
    allowed ones (a public name under a private alias, a third-party SDK's private module, dunders) are not."""
    planted = ast.parse(
        "from verify.ops.logs import _entries, LogEntry\n"
        "from verify.ops import _internal\n"
        "import stacks._hidden\n"
        "from .sibling import _helper\n"
        "def lazy() -> None:\n"
        "    from serving.shapes import _table\n"
        "from serving.model_profiles import profile_from_config_file as _profile\n"
        "from pulumi_gcp import _utilities\n"
        "from verify import __version__\n"
    )
    assert private_imports(planted, "gemma_mcp.tools_live") == [
        (1, "verify.ops.logs._entries"),
        (2, "verify.ops._internal"),
        (3, "stacks._hidden"),
        (4, "gemma_mcp.sibling._helper"),
        (6, "serving.shapes._table"),
    ]
