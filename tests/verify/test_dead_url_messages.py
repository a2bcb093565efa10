"""A URL where nothing listens is reported as such, at once, by `health` and by `query`.

Guards against issue 35's findings: `health` against a refusing address waited its whole --wait (900 s by
default) without saying how long it would keep trying or how to stop sooner, and `query` on a dead URL
blamed "the server stopped accepting connections after it was ready: it crashed", though no readiness
check had run and the server may never have started.
"""

from __future__ import annotations

import io
import json

import pytest

from tests.fake_vllm import free_port
from tests.verify.test_query import run_cli
from verify import streaming
from verify.health.console import waiting_printer
from verify.health.diagnosis import stream_cause
from verify.health.report import Waiting


async def test_query_on_a_dead_url_does_not_blame_a_crash_after_readiness(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = await run_cli(
        capsys, "query", "--url", f"http://127.0.0.1:{free_port()}", "--model", "m", "hello", "--json"
    )
    assert code == 2
    cause = json.loads(out)["cause"]
    assert "after it was ready" not in cause
    assert cause.startswith("nothing accepts connections at this address")


def test_a_failure_after_readiness_still_says_so() -> None:
    """health's own requests run after /health answered: there a refused connection does mean a crash."""
    failure = streaming.StreamFailure(streaming.FailureKind.CONNECT_ERROR, "refused")
    assert "after it was ready" in stream_cause(failure, "m")
    assert "after it was ready" not in stream_cause(failure, "m", readiness_checked=False)


def test_the_first_wait_says_how_long_and_how_to_shorten_it() -> None:
    """The first failed poll prints at once what was seen, the whole wait, and the flag that shortens it."""
    out = io.StringIO()
    clock = iter([0.0, 1.0, 2.0])
    show = waiting_printer(out, clock=lambda: next(clock))
    show(Waiting(0.0, 900.0, "connection refused"))
    show(Waiting(1.0, 900.0, "connection refused"))  # unchanged within 30 s: not repeated
    text = " ".join(out.getvalue().split())
    assert text.startswith("waiting for readiness (0 s of 900 s): connection refused;")
    assert "until it answers or 900 s have passed" in text
    assert "--wait S waits less" in text
    assert text.count("waiting for readiness") == 1
