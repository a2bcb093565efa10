"""verify's tests run without Pulumi's mocks.

verify never imports the Pulumi program (docs/architecture.md), so the repository-wide autouse
``pulumi_capture`` fixture is overridden here by one that installs nothing. Besides saving a Stack
registration per test, this matters for correctness: installing the mocks binds futures to asyncio's
current event loop, which pytest-asyncio closes after every async test, so the next synchronous test
would fail with "There is no current event loop".
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def pulumi_capture() -> None:
    """No Pulumi engine, mocked or real, for verify's tests."""
    return
