"""The benchmarks' tests run without Pulumi's mocks (benchmarks never import the Pulumi program).

Installing the mocks binds futures to asyncio's current event loop, which pytest-asyncio closes after
every async test, so the next test would fail with "There is no current event loop" (as in tests/verify).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def pulumi_capture() -> None:
    """No Pulumi engine, mocked or real, for the benchmarks' tests."""
    return
