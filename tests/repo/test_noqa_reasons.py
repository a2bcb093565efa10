"""Every noqa comment names its codes and says why (`noqa: ANN401 - raw JSON before it is typed`).

Why it matters to a maintainer: a bare or code-only noqa hides a linter finding with no record of whether
it was judged or just silenced; the next reader cannot tell, and the suppression outlives its reason.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

from tests.conftest import ROOT

# `noqa: CODE[, CODE...] - reason`, the form the project writes.
EXPLAINED = re.compile(r"noqa: [A-Z]+[0-9]+(, [A-Z]+[0-9]+)* - \S")
# A suppression as ruff reads one: a hash, then noqa, anywhere in a comment (after other text too).
DIRECTIVE = re.compile(r"#\s*noqa\b", re.IGNORECASE)
SKIPPED = {".venv", ".git", "node_modules", "build", "dist"}


def test_every_noqa_has_codes_and_a_reason() -> None:
    bare = []
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        if not DIRECTIVE.search(source):
            continue  # no comment of it can hold one: only the few files that do are tokenized
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            noqa = token.type == tokenize.COMMENT and DIRECTIVE.search(token.string)
            if noqa and not EXPLAINED.search(token.string):
                bare.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string}")
    assert bare == []


def _sources() -> list[Path]:
    """Every Python file of the checkout, without walking the skipped folders (.venv alone holds thousands)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED)
        found += [Path(folder, name) for name in files if name.endswith(".py")]
    return sorted(found)
