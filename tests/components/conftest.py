"""The queued-resource provider's test collaborators: the fake TPU API, injected time and the report lines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.tpu.provider import QueuedResourceProvider
from tests.components.tpu_fake_api import FAKE_TOKEN, FakeClock, FakeTpuApi


@pytest.fixture
def api() -> Iterator[FakeTpuApi]:
    with FakeTpuApi() as fake:
        yield fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def reports() -> list[str]:
    return []


@pytest.fixture
def provider(api: FakeTpuApi, clock: FakeClock, reports: list[str]) -> QueuedResourceProvider:
    return QueuedResourceProvider(
        base_url=api.base_url,
        token_provider=lambda: FAKE_TOKEN,
        sleep=clock.sleep,
        clock=clock.monotonic,
        report=reports.append,
        poll_seconds=30.0,
    )
