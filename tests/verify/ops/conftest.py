"""The fake Google every ops test talks to (a fresh one per test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.verify.ops.google_fake import FakeGoogle


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server
