"""No module outside the shapes reader spells a shape's name: adding a shape stays a data edit.

Why: "v6e" was hard-coded in about 15 modules (zone tables, price keys, a regex, `if ... v6e` branches,
quota-name matching), so adding TPU v7 or an H100 node touched ~17 Python files. The names live in
serving/data/shapes.json and are read through serving/shapes.py; this test reads every project module's
string constants (docstrings aside: they explain, they do not branch) and fails on a shape or accelerator
name found there. The few modules still allowed to spell one are listed with why and how many, so the list
can only shrink.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.string_constants import string_constants
from tests.syntax_trees import READS_SYNTAX_TREES

pytestmark = READS_SYNTAX_TREES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "serving",
    "stacks",
    "deploy",
    "components",
    "preview",
    "verify",
    "policy",
    "gemma_mcp",
    "benchmarks",
    "remote",
)
READER = {"serving/shapes.py"}

# Accelerator keys, TPU generations and slices, GKE machine series: what a shape's name is spelled with.
NAME = re.compile(
    r"(?<![\w-])(nvidia-l4|nvidia-rtx-pro-6000|rtx-pro-6000|nvidia-h100(-80gb)?|tpu-?v?\d+[a-z]+|v[5-7][epx](-\d+)?"
    r"|ct[5-7][a-z]*-standard|g[24]-standard|a3-(high|mega|ultra|edge)gpu)(?![\w])",
    re.IGNORECASE,
)

# Modules that still spell a name, how many times at most, and why. Shrink it; never grow it.
ALLOWED: dict[str, tuple[int, str]] = {
    "policy/gpu_service.py": (2, "the policy pack imports nothing of the project; its copy is tested equal"),
    "benchmarks/preview_time.py": (1, "names the shipped stack file Pulumi.tpu-v6e.yaml, not a shape"),
}


def _spellings(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}"
        for line, text in string_constants(path.read_text(encoding="utf-8"))
        for match in [NAME.search(text)]
        if match
    ]


def test_no_module_outside_the_reader_spells_a_shape_name() -> None:
    """A name spelled in code is a branch a new shape must edit; it belongs in serving/data/shapes.json."""
    over = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in READER:
                continue
            found = _spellings(path)
            limit = ALLOWED.get(relative, (0, ""))[0]
            if len(found) > limit:
                over.append(f"{relative}: {len(found)} (allowed {limit}): " + "; ".join(found))
    assert not over, "\n".join(over)


def test_the_scan_finds_what_it_looks_for() -> None:
    """The test above must not pass because its pattern matches nothing."""
    for name in ("tpu-v6e", "v6e-8", "ct6e-standard", "g2-standard", "a3-highgpu", "nvidia-h100-80gb", "nvidia-l4"):
        assert NAME.search(f"use {name} here"), name
    assert not NAME.search("us-east5-a, gemma-4-e4b-it, a v6 IPv6 address")


def test_the_allowed_list_only_names_modules_that_still_need_it() -> None:
    """An entry whose module no longer spells a name must go, so the list shrinks as modules are fixed."""
    stale = [name for name in ALLOWED if not _spellings(ROOT / name)]
    assert not stale, stale
