"""No module outside the shapes reader spells a shape's name, in a string or in a name: adding a shape stays a
data edit.

Why: "v6e" was hard-coded in about 15 modules (zone tables, price keys, a regex, `if ... v6e` branches,
quota-name matching), so adding TPU v7 or an H100 node touched ~17 Python files. The names live in
serving/data/shapes.json and are read through serving/shapes.py. A scan of string constants alone let
`V6E_ZONES` and `Accelerator.TPU_V6E` through in 12 files: a branch on a name is as much a branch when the
name is an identifier. So this test reads every project module's string constants (docstrings aside: they
explain, they do not branch) and every identifier it defines or reads (names, attributes, arguments,
functions, classes, imports), and fails on a shape or accelerator name found in either. The few modules still
allowed to spell one are listed with why and how many, so the list can only shrink.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.string_constants import string_constants
from tests.syntax_trees import READS_SYNTAX_TREES, source_nodes

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
    r"(?<![\w-])(nvidia-l4|nvidia-rtx-pro-6000|rtx-pro-6000|nvidia-[hb][12]\d\d(-\d+gb)?|tpu-?v?\d+[a-z]*|v[5-7][epx](-\d+)?"
    r"|ct[5-7][a-z]*-standard|g[24]-standard|a[34]-(high|mega|ultra|edge)gpu)(?![\w])",
    re.IGNORECASE,
)
# The same names as an identifier spells them (`V6E_ZONES`, `Accelerator.TPU_V6E`, `NVIDIA_L4`, `h100_rate`):
# one to three consecutive words of an identifier (split at `_`, at case changes and before digits), joined,
# that name a chip, a TPU generation or a machine series.
IDENTIFIER_WORD = re.compile(
    r"^(l4|rtx|[hb][12]\d\d|tpuv?\d+[a-z]*|v[5-7][epx]\d*|ct[5-7][a-z]*|ironwood|trillium"
    r"|a[34](high|ultra|mega|edge)gpu|g[24]standard)$",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+[A-Za-z]*")


# Modules that still spell a name, how many times at most, and why. Shrink it; never grow it.
ALLOWED: dict[str, tuple[int, str]] = {
    "policy/gpu_service.py": (2, "the policy pack imports nothing of the project; its copy is tested equal"),
    "benchmarks/preview_time.py": (1, "names the shipped stack file Pulumi.tpu-v6e.yaml, not a shape"),
    "benchmarks/writeup_figures.py": (4, "write-up A's setup (its RTX PRO 6000 runs), named after the write-up"),
    "components/wire/gcp_inputs.py": (2, "pulumi-gcp's own Cluster arguments: L4 there is the load-balancer layer"),
}


def _identifiers(source: str) -> Iterator[tuple[int, str]]:
    """(line, identifier) of every name a module defines or reads: variables, attributes, arguments,
    keywords, functions, classes and imported names."""
    for node in source_nodes(source):
        match node:
            case ast.Name(id=name) | ast.Attribute(attr=name) | ast.arg(arg=name):
                yield node.lineno, name
            case ast.keyword(arg=str() as name):
                yield node.lineno, name
            case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
                yield node.lineno, name
            case ast.alias(name=name, asname=asname):
                yield node.lineno, name
                if asname:
                    yield node.lineno, asname


def names_a_shape(identifier: str) -> bool:
    """Whether an identifier spells a chip, generation or machine series (`TPU_V6E`, `v6e_zone`, `H100_RATE`)."""
    words = _WORDS.findall(identifier)
    joins = ("".join(words[start : start + size]) for size in (1, 2, 3) for start in range(len(words) - size + 1))
    return any(IDENTIFIER_WORD.match(join) for join in joins)


def spellings(source: str, where: str) -> list[str]:
    """Each shape name a module's source spells, in a string constant or an identifier."""
    found = [
        f"{where}:{line}: {match.group(0)!r}"
        for line, text in string_constants(source)
        for match in [NAME.search(text)]
        if match
    ]
    seen: set[tuple[int, str]] = set()
    for line, identifier in _identifiers(source):
        if (line, identifier) not in seen and names_a_shape(identifier):
            seen.add((line, identifier))
            found.append(f"{where}:{line}: identifier {identifier}")
    return found


def _spellings(path: Path) -> list[str]:
    return spellings(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


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
    for name in ("tpu-v6e", "tpu-v7", "v6e-8", "ct6e-standard", "g2-standard", "a3-highgpu", "a4-highgpu"):
        assert NAME.search(f"use {name} here"), name
    for name in ("nvidia-h100-80gb", "nvidia-h200-141gb", "nvidia-b200", "nvidia-l4"):
        assert NAME.search(f"use {name} here"), name
    assert not NAME.search("us-east5-a, gemma-4-e4b-it, a v6 IPv6 address")


def test_a_planted_identifier_fails_the_scan() -> None:
    """A module that names a chip as an identifier (a constant, an enum member, a function) is caught, so
    `V6E_ZONES` or `if accelerator is Accelerator.TPU_V6E` cannot come back unseen."""
    planted = (
        "from serving.tpu_offers import V6E_ZONES\n"
        "def pick(accelerator):\n"
        "    if accelerator is Accelerator.TPU_V6E:\n"
        "        return V6E_ZONES\n"
        "    return h100_rate(nvidia_l4=1, zones=tpu_v7_zones, machine=a3HighGpu)\n"
    )
    found = spellings(planted, "planted.py")
    for identifier in ("V6E_ZONES", "TPU_V6E", "h100_rate", "nvidia_l4", "tpu_v7_zones", "a3HighGpu"):
        assert any(entry.endswith(f"identifier {identifier}") for entry in found), (identifier, found)


def test_ordinary_identifiers_pass_the_scan() -> None:
    """The scan must not refuse names that only look alike: a zone, IPv6, a GiB constant, a family word."""
    for identifier in ("tpu_zones", "ipv6_range", "GIB", "gpu_family", "accelerator", "a_slice", "v1_path", "l40"):
        assert not names_a_shape(identifier), identifier


def test_the_allowed_list_only_names_modules_that_still_need_it() -> None:
    """An entry whose module no longer spells a name must go, so the list shrinks as modules are fixed."""
    stale = [name for name in ALLOWED if not _spellings(ROOT / name)]
    assert not stale, stale
