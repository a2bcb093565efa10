"""Every page and section a message sends users to exists.

Messages used to send users to "the secrets section of the README", which had no such heading, and to
README sections that moved to docs/. A user who follows the advice must land on the text it promises.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("components", "deploy", "gemma_mcp", "policy", "preview", "serving", "stacks", "verify")
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


@pytest.mark.parametrize("path", _sources(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_message_points_at_a_vague_readme_section(path: Path) -> None:
    """ "See the README's secrets section" is advice nobody can follow: name the page and its heading."""
    assert VAGUE.findall(path.read_text(encoding="utf-8")) == []
