"""The layers of the project, as data, checked against every import in the sources (lazy ones included).

Why: data flows one way (stack file -> `stacks` settings -> `deploy` -> `components` -> outputs ->
`verify` and `gemma_mcp`), and each back-edge makes the next change harder: a base module of `verify`
importing a command's package made every command load promotion's code; verify reaching into `preview/`
from five modules tied the readers to the plan's internals. The import graph comes from the syntax trees
(tests/import_graph.py), so the whole check costs a fraction of a second, and a new back-edge fails here
with the file and line that added it.
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.import_graph import PACKAGES, Edge, import_edges
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES

# What each package may import of the project (its own modules always). A package not named may import
# nothing of the project.
MAY_IMPORT: dict[str, frozenset[str]] = {
    # What we know about serving Gemma on Google Cloud, apart from any stack: the leaf everyone reads.
    "serving": frozenset(),
    # How any layer talks to a remote service: the one Google REST client (the TPU provider's and verify's),
    # one TLS context, remote text made safe to show.
    "remote": frozenset(),
    # Scripts that run inside a Cloud Run job or on a node: standalone files.
    "job_scripts": frozenset(),
    # The guardrails the settings, the components and the CrossGuard pack share.
    "policy": frozenset({"serving"}),
    # The stack-file schema.
    "stacks": frozenset({"serving", "policy"}),
    # One ComponentResource each, owning its Args (components/model_import.py reads a job script as data).
    "components": frozenset({"serving", "policy", "job_scripts", "remote"}),
    # Settings -> components, per platform.
    "deploy": frozenset({"components", "stacks", "serving", "policy"}),
    # The offline plan runs the program (`__main__.py`, by path), so it never imports deploy/components.
    "preview": frozenset({"stacks", "serving", "policy"}),
    # Readers of a deployed stack: the outputs contract (serving), the settings (stacks), the guardrails.
    "verify": frozenset({"serving", "stacks", "policy", "remote"}),
    # The MCP server: a client of verify's typed commands.
    "gemma_mcp": frozenset({"verify", "serving", "stacks", "policy", "remote"}),
}

# The modules of another layer a reader may import by name (the public readers), and why.
PUBLIC_READERS: dict[str, dict[str, str]] = {
    "verify": {
        "preview.stack_file": "reads a stack file as the engine would (the one stack-file reader)",
        "preview.closed_pipe": "ends a command quietly when its reader leaves the pipe (`| head`)",
        "job_scripts.import_weights": "the import job's adapter rules (standard library only): `adapters check` "
        "holds what a server loaded to the same definition of a loadable adapter",
    },
    "gemma_mcp": {
        "preview.stack_file": "reads a stack file as the engine would (the one stack-file reader)",
    },
}

# verify's subcommand packages; the modules directly under verify/ are the base every command shares and
# import none of them (verify/cli.py finds the commands by name, verify/__main__.py runs it).
VERIFY_COMMANDS = frozenset(
    {"adapters", "advise", "alerts", "bench", "health", "memory", "metrics", "models", "ops", "promote", "query"}
)
# verify's packages that every command shares (the endpoint a command reaches).
VERIFY_SHARED_PACKAGES = frozenset({"endpoint"})
VERIFY_FRONT_DOORS = frozenset({"verify.cli", "verify.__main__"})


def layer_violations(edges: tuple[Edge, ...] | list[Edge]) -> list[str]:
    """One line per import that crosses a layer the wrong way: `importer:line imports imported`."""
    found = []
    for edge in edges:
        importer, imported = edge.importer.split(".")[0], edge.imported.split(".")[0]
        if importer == imported:
            continue
        readers = PUBLIC_READERS.get(importer, {})
        public = any(edge.imported == name or edge.imported.startswith(f"{name}.") for name in readers)
        if imported not in MAY_IMPORT.get(importer, frozenset()) and not public:
            found.append(f"{edge.importer}:{edge.line} imports {edge.imported} ({importer} may not import {imported})")
    return found


def verify_base_violations(edges: tuple[Edge, ...] | list[Edge]) -> list[str]:
    """A module directly under verify/ (other than its front doors) importing a subcommand's package."""
    found = []
    for edge in edges:
        parts = edge.importer.split(".")
        if parts[0] != "verify" or len(parts) != 2 or edge.importer in VERIFY_FRONT_DOORS:
            continue
        if parts[1] in VERIFY_COMMANDS:  # a subcommand package's own __init__
            continue
        target = edge.imported.split(".")
        if target[0] == "verify" and len(target) > 1 and target[1] in VERIFY_COMMANDS:
            found.append(f"{edge.importer}:{edge.line} imports {edge.imported} (a command's package)")
    return found


def test_every_package_has_its_layer() -> None:
    """Guards against a new package that no rule covers (it could import anything unnoticed)."""
    assert set(MAY_IMPORT) == set(PACKAGES)


def test_every_verify_package_is_a_command_or_shared() -> None:
    """Guards against a new verify package the base-module rule does not know (its imports unchecked)."""
    packages = {path.parent.name for path in (ROOT / "verify").glob("*/__init__.py")}
    assert packages == VERIFY_COMMANDS | VERIFY_SHARED_PACKAGES


def test_no_import_crosses_a_layer_the_wrong_way() -> None:
    """Guards against a back-edge: a reader importing the deploy code, the leaf importing a layer above it."""
    assert layer_violations(import_edges()) == []


def test_verify_base_modules_import_no_command() -> None:
    """Guards against a base module every command loads (the Pulumi gateway) depending on one command."""
    assert verify_base_violations(import_edges()) == []


@pytest.mark.parametrize(
    ("edge", "why"),
    [
        (Edge("serving.naming", "stacks.settings", 3, load_time=True), "serving may not import stacks"),
        (Edge("verify.ops.stack", "deploy.outputs", 9, load_time=False), "verify may not import deploy"),
        (Edge("verify.ops.stack", "preview.capture", 9, load_time=True), "verify may not import preview"),
        (Edge("stacks.tpu", "components.tpu.node", 1, load_time=True), "stacks may not import components"),
    ],
)
def test_the_check_names_a_back_edge(edge: Edge, why: str) -> None:
    """Guards against a check that passes because it recognises nothing (a lazy import counts as well)."""
    assert layer_violations([edge]) == [f"{edge.importer}:{edge.line} imports {edge.imported} ({why})"]


def test_the_check_allows_a_named_public_reader_and_names_a_command_import() -> None:
    """Guards against rules that refuse the public readers, or miss a base module importing a command."""
    assert layer_violations([Edge("verify.stack_settings", "preview.stack_file", 1, load_time=True)]) == []
    base = Edge("verify.pulumi_gateway", "verify.promote.shifter", 48, load_time=True)
    assert verify_base_violations([base]) == [
        "verify.pulumi_gateway:48 imports verify.promote.shifter (a command's package)"
    ]
