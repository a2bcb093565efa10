"""What the project's own code imports is a runtime requirement: `make venv` alone runs every command.

Why: the preview imported the policy pack's SDK (pulumi_policy), which only requirements-dev.txt installed,
so the README's first command failed on a fresh clone, and CI did not see it because it installed the
development set before it previewed. Every import of a third-party module by the project's packages
(function-level and type-only ones too: a lazy import fails just as late) must resolve to a distribution
that requirements.txt names. .ci/run's first step proves the same on a fresh clone; this finds it in the
suite, with the file and line.
"""

from __future__ import annotations

import importlib.metadata
import re

from tests.conftest import ROOT
from tests.import_graph import external_imports
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES

# Modules that do not run in the project's environment, with where they run instead.
ELSEWHERE = {
    # The import job's script runs inside the pinned vLLM image, which ships huggingface_hub and
    # google-cloud-storage; it imports them inside its adapters (job_scripts/import_weights.py).
    "job_scripts.",
    # The route guard runs inside the pinned vLLM image, embedded in the launch line; it imports vLLM's CLI
    # there (serving/guard_runtime.py, `launch`).
    "serving.guard_runtime",
}


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str | None:
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", requirement.strip())
    return _normalised(match.group(1)) if match else None


def runtime_distributions() -> set[str]:
    """The distributions `make venv` installs: those requirements.txt names and what they require in turn
    (mcp brings mcp-types, pydantic brings pydantic-core), extras left out."""
    wanted = [
        name for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines() if (name := _name(line))
    ]
    closure: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in closure:
            continue
        closure.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        wanted += [dep for req in requires if "extra ==" not in req and (dep := _name(req))]
    return closure


def test_every_third_party_import_is_a_runtime_requirement() -> None:
    """Guards against a command that works after `make test` installed the development set and fails after
    `make venv` (ModuleNotFoundError), as the preview did with pulumi_policy."""
    provided_by = importlib.metadata.packages_distributions()
    runtime = runtime_distributions()
    missing: dict[str, list[str]] = {}
    for found in external_imports():
        if found.importer.startswith(tuple(ELSEWHERE)):
            continue
        distributions = {_normalised(name) for name in provided_by.get(found.top_level, [])}
        # A namespace package (`google`) is provided by many distributions: one runtime requirement is enough.
        if not distributions & runtime:
            missing.setdefault(found.top_level, []).append(f"{found.importer}:{found.line}")
    assert missing == {}, "import only where needed, or add to requirements.txt"


def test_the_check_knows_a_development_only_import() -> None:
    """Guards against a check that passes because it maps nothing: pytest is a development requirement."""
    provided_by = importlib.metadata.packages_distributions()
    assert {_normalised(name) for name in provided_by["pytest"]}.isdisjoint(runtime_distributions())
    assert {_normalised(name) for name in provided_by["pydantic"]} & runtime_distributions()
    assert any(found.top_level == "pydantic" for found in external_imports())
