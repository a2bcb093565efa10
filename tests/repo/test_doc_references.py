"""Every page and section a message sends users to exists.

Messages used to send users to "the secrets section of the README", which had no such heading, and to
README sections that moved to docs/. A user who follows the advice must land on the text it promises.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("components", "deploy", "gemma_mcp", "policy", "preview", "remote", "serving", "stacks", "verify")
# `docs/<page>.md` optionally followed by `, '<section heading>'` (or the README with its heading).
PAGE_REFERENCE = re.compile(
    r"(?P<page>docs/[a-z0-9-]+\.md|README)(?:'s)?(?:, | \()(?P<quote>['\"])(?P<heading>[^'\"]+)(?P=quote)"
)
BARE_PAGE = re.compile(r"docs/[a-z0-9-]+\.md")
VAGUE = re.compile(r"README's \w+ section|section of the README|the README's [A-Za-z]+ section")


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _headings(page: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def _references() -> list[tuple[str, str, str | None]]:
    found: list[tuple[str, str, str | None]] = []
    for path in _sources():
        # Messages are often split over string literals: join adjacent literals before matching.
        text = re.sub(r'"\s*\n\s*(f?)"', "", path.read_text(encoding="utf-8"))
        where = str(path.relative_to(ROOT))
        found += [(where, m["page"], m["heading"]) for m in PAGE_REFERENCE.finditer(text)]
        found += [(where, page, None) for page in BARE_PAGE.findall(text)]
    return found


def test_messages_name_pages_and_sections_that_exist() -> None:
    """Each `docs/<page>.md, '<section>'` in a message or note names a page and heading users can find."""
    missing = []
    references = _references()
    assert len(references) > 10, "the scan found too few references to be reading the sources"
    for where, page, heading in references:
        path = ROOT / ("README.md" if page == "README" else page)
        if not path.is_file():
            missing.append(f"{where}: {page} does not exist")
        elif heading is not None and not any(found.startswith(heading) for found in _headings(path)):
            missing.append(f"{where}: {page} has no section {heading!r}")
    assert missing == []


def test_no_message_points_at_a_vague_readme_section() -> None:
    """ "See the README's secrets section" is advice nobody can follow: name the page and its heading.

    One test over every module, naming each offender (it was one test per module: 337 tests, whose
    collection and set-up cost more CPU than the scan)."""
    sources = _sources()
    assert len(sources) > 300, "the scan found too few modules to be reading the sources"
    vague = [
        f"{path.relative_to(ROOT)}: {found!r}"
        for path in sources
        for found in VAGUE.findall(path.read_text(encoding="utf-8"))
    ]
    assert vague == []


def test_the_vague_scan_recognises_the_advice_it_replaced() -> None:
    """Guards against a scan that passes because its pattern matches nothing."""
    assert VAGUE.findall("see the README's secrets section") == ["the README's secrets section"]
    assert VAGUE.findall("docs/secrets.md, 'Secrets'") == []


# A repository path named in prose, code or data: a top-level folder of the project, then a file with one of
# these extensions, or a folder (a trailing slash).
_TOP_LEVEL = (
    r"(?:components|deploy|docs|examples|gemma_mcp|images|job_scripts|policy|preview|remote|serving|stacks|tests"
    r"|verify"
    r"|benchmarks|\.github|\.ci)"
)
REPOSITORY_PATH = re.compile(
    r"(?<![\w./~$-])(" + _TOP_LEVEL + r"/(?:[A-Za-z0-9_.-]+/)*"
    r"(?:[A-Za-z0-9_.-]+\.(?:py|md|json|jsonl|yaml|yml|sh|toml|txt|csv)\b|(?=[\s`'\")])))"
)
# Text that reads like a path and is not one of ours, and why.
NOT_REPOSITORY_PATHS = {
    "docs/access-control/": "the tail of a cloud.google.com URL wrapped over two comment lines",
}
# What users and the code read: the docs, the code and its data, the stack files, CI. (CHANGELOG.md keeps the
# names things had when they changed; tests name the fixtures they write.)
_SCANNED_PACKAGES = (*PACKAGES, "job_scripts", "benchmarks", "images")
_SCANNED_SUFFIXES = frozenset({".py", ".md", ".json", ".yaml", ".yml", ".toml", ".sh"})


def _scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / ".ci" / "run"]
    files += sorted((ROOT / "docs").glob("*.md")) + sorted(ROOT.glob("Pulumi*.yaml"))
    files += sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / ".github").rglob("*.yml"))
    for package in _SCANNED_PACKAGES:
        files += sorted(path for path in (ROOT / package).rglob("*") if path.suffix in _SCANNED_SUFFIXES)
    return [path for path in files if path.is_file()]


def repository_paths(text: str) -> list[str]:
    """The repository paths a text names (placeholders such as `<stack>` or `*` are patterns, not paths)."""
    return [path for path in REPOSITORY_PATH.findall(text) if not any(mark in path for mark in "<*{")]


def test_every_repository_path_named_in_docs_code_and_data_exists() -> None:
    """Guards against a doc, a comment or a message that sends the reader to a file that moved or never was."""
    missing = []
    scanned = 0
    for path in _scanned_files():
        for named in repository_paths(path.read_text(encoding="utf-8", errors="replace")):
            scanned += 1
            if named in NOT_REPOSITORY_PATHS or ".venv/" in named:
                continue
            if not (ROOT / named).exists():
                missing.append(f"{path.relative_to(ROOT)}: {named}")
    assert scanned > 300, "the scan found too few paths to be reading the files"
    assert missing == []


def test_the_path_scan_reads_files_folders_and_skips_urls_and_patterns() -> None:
    """Guards against a scan that passes because it misses the forms paths are written in."""
    text = "see `serving/naming.py`, components/tpu/ and https://x.dev/docs/a.md; examples/Pulumi.<stack>.yaml"
    assert repository_paths(text) == ["serving/naming.py", "components/tpu/"]


def test_no_doc_points_outside_the_repository() -> None:
    """Guards against a doc or a data file that names a script a clone of this repository does not have, or a
    file on the machine it was written on (a reader's clone has neither). Paths inside a container or a VM the
    program deploys (`/root/.docker`, `/home/vllm`) are the deployed thing's, not this machine's."""
    outside = re.compile(r"\.\./shared|/work/|\.cache/vllm-cpu/work")
    offenders = [
        str(path.relative_to(ROOT))
        for path in [*_scanned_files(), *sorted((ROOT / "tests").rglob("*.md"))]
        if outside.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == []


# A project module named the way Python imports it (`serving.naming`, `stacks.fit.fit_matrix`): a package of
# the project, then dotted names.
DOTTED_MODULE = re.compile(
    r"(?<![\w./-])((?:components|deploy|gemma_mcp|job_scripts|policy|preview|remote|serving|stacks|verify|benchmarks)"
    r"(?:\.[A-Za-z_]\w*)+)"
)


def dotted_name_resolves(name: str) -> bool:
    """Whether `package.module[.attribute]` names a module of the repository (and the first attribute after
    it appears in that module's source, or a package's `__init__.py`)."""
    parts = name.split(".")
    path = ROOT / parts[0]
    for index, part in enumerate(parts[1:], 1):
        if (path / part).is_dir():
            path /= part
            continue
        module = path / f"{part}.py"
        if module.is_file():
            rest = parts[index + 1 :]
            return not rest or re.search(rf"\b{re.escape(rest[0])}\b", module.read_text(encoding="utf-8")) is not None
        init = path / "__init__.py"
        return init.is_file() and re.search(rf"\b{re.escape(part)}\b", init.read_text(encoding="utf-8")) is not None
    return True


def test_every_module_named_in_the_docs_exists() -> None:
    """Guards against a doc naming a module by its import path after it moved (`preview.fit` is `stacks.fit`)."""
    missing, scanned = [], 0
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in DOTTED_MODULE.findall(path.read_text(encoding="utf-8")):
            scanned += 1
            if not dotted_name_resolves(name):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert scanned > 20, "the scan found too few module names to be reading the docs"
    assert missing == []


def test_the_module_scan_tells_moved_modules_from_present_ones() -> None:
    """Guards against a module check that passes because it resolves everything."""
    assert dotted_name_resolves("serving.naming.TypeToken")
    assert dotted_name_resolves("stacks.fit")
    assert not dotted_name_resolves("preview.fit")
    assert not dotted_name_resolves("serving.naming.NoSuchName")
