"""The bench job's image installs what verify imports: a new dependency of verify must not break the job."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "images" / "verify-bench" / "Dockerfile"
# Import name -> distribution name in requirements.txt, where they differ.
DISTRIBUTIONS = {
    "PIL": "pillow",
    "yaml": "pyyaml",
    "google": "google-auth",
    "prometheus_client": "prometheus-client",
    "httpx_aiohttp": "httpx-aiohttp",
}
# The project's own packages the image copies beside verify.
LOCAL = {"verify", "serving", "stacks", "policy", "preview"}


def third_party_imports() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "verify").rglob("*.py"):
        # Module-level imports only: an import inside a function (e.g. the Pulumi Automation API when
        # `verify promote` moves traffic) is not needed to run `verify bench task`.
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name not in LOCAL}


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
    """Guards against a job image without a project package or pyproject.toml that verify reads at run time."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    for copied in (*(f"COPY {package}/" for package in sorted(LOCAL)), "COPY pyproject.toml"):
        assert copied in text
