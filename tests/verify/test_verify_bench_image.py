"""The bench job's image installs what verify imports: a new dependency of verify must not break the job."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.syntax_trees import parsed

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "images" / "verify-bench" / "Dockerfile"
# Import name -> distribution name in requirements.txt, where they differ.
DISTRIBUTIONS = {
    "PIL": "pillow",
    "yaml": "pyyaml",
    "google": "google-auth",
    "prometheus_client": "prometheus-client",
    "httpx_aiohttp": "httpx-aiohttp",
    "pydantic_core": "pydantic",  # pydantic's own core, installed with it
}
# The repository's own top-level packages (what `COPY <package>/` must bring).
LOCAL = {path.parent.name for path in ROOT.glob("*/__init__.py")}


def _imports_of(path: Path) -> set[str]:
    """Top-level names a file imports at module level (not inside functions: e.g. the Pulumi Automation
    API that `verify promote` loads only when it moves traffic is not needed to run `verify bench task`)."""
    found: set[str] = set()
    for node in parsed(path).body:
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names)


def loaded_local_files() -> list[Path]:
    """Every file of the repository that starting `python -m verify` loads, and all of verify itself."""
    probe = (
        "import json, sys, verify.cli; "
        "print(json.dumps([m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)]))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    files = {Path(name).resolve() for name in json.loads(completed.stdout)}
    loaded = {path for path in files if path.is_relative_to(ROOT) and path.relative_to(ROOT).parts[0] in LOCAL}
    return sorted(loaded | set((ROOT / "verify").rglob("*.py")))


def local_packages() -> set[str]:
    return {path.relative_to(ROOT).parts[0] for path in loaded_local_files()}


def third_party_imports() -> set[str]:
    return {name for path in loaded_local_files() for name in _imports_of(path)} - LOCAL


def test_the_image_installs_every_distribution_verify_imports() -> None:
    """Guards against a bench job whose tasks die at import (ModuleNotFoundError) after verify gained a dependency."""
    match = re.search(r"grep -E '\^\(([^)]*)\)", DOCKERFILE.read_text(encoding="utf-8"))
    assert match is not None, "the Dockerfile selects verify's requirements with one grep -E '^(...)'"
    installed = set(match.group(1).split("|"))
    needed = {DISTRIBUTIONS.get(name, name) for name in third_party_imports()}
    assert needed <= installed, f"add {sorted(needed - installed)} to images/verify-bench/Dockerfile"
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    for name in installed:
        assert re.search(rf"^{re.escape(name)}[<>=]", requirements, re.MULTILINE), f"{name} is not in requirements.txt"


def test_the_image_carries_what_verify_reads_beside_itself() -> None:
    """Guards against a job image without the stacks package or pyproject.toml that verify reads at run time."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    for copied in [*(f"COPY {package}/" for package in sorted(local_packages())), "COPY pyproject.toml"]:
        assert copied in text
