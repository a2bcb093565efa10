"""Write a results file's reports in an interpreter that can import only what `verify` installs.

Run as ``python -m tests.verify.bench.runtime_only RESULTS.jsonl STEM``. Before anything of verify
is imported, an import hook refuses every top-level package outside the standard library, this
repository and requirements.txt (with the dependencies those declare): so a report step that needs
a development-only package (matplotlib, pytest...) fails here as it would in the deploy workflow.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[3]


def runtime_distributions(requirements: Path) -> set[str]:
    """requirements.txt's distributions and, transitively, what they require (no extras)."""
    lines = requirements.read_text(encoding="utf-8").splitlines()
    wanted = [Requirement(line).name for line in lines if line.strip() and not line.startswith(("#", "-"))]
    seen: set[str] = set()
    while wanted:
        name = canonicalize_name(wanted.pop())
        if name in seen:
            continue
        seen.add(name)
        for spec in importlib.metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
    return seen


def importable_modules() -> set[str]:
    distributions = runtime_distributions(ROOT / "requirements.txt")
    allowed = set(sys.stdlib_module_names) | {init.parent.name for init in ROOT.glob("*/__init__.py")}
    for module, names in importlib.metadata.packages_distributions().items():
        if any(canonicalize_name(name) in distributions for name in names):
            allowed.add(module)
    return allowed


class RuntimeOnly(importlib.abc.MetaPathFinder):
    """Refuses what the runtime requirements do not provide. Libraries' optional imports (brotli,
    aiodns...) are refused too, which is the point: the report step must not need them."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in self.allowed and not top.startswith("_"):
            raise ModuleNotFoundError(f"{top} is not a runtime requirement", name=fullname)
        return None


def main(results: Path, stem: Path) -> None:
    allowed = importable_modules()
    sys.meta_path.insert(0, RuntimeOnly(allowed))
    from verify.bench.report import write_reports
    from verify.bench.results import load_results

    written = write_reports(load_results(results).records, stem)
    print(" ".join(sorted(path.name for path in written)))
    print("refuses matplotlib" if "matplotlib" not in allowed else "allows matplotlib")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
