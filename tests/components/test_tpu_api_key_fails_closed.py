"""The TPU node fails closed on an empty API key, as the GKE pod now does.

Issue 35 found a GKE pod that started vLLM without authentication when its key file was empty, and asked
that the TPU startup script be checked for the same pattern. The script reads the key through an embedded
Python snippet (`fetch_secret`) that exits non-zero on an empty, blank or multi-line secret, so
`write_env_file` fails and vLLM is never started. This runs that very snippet, taken from the rendered
script, in-process, with Secret Manager's answer faked at `urllib.request.urlopen`.
"""

from __future__ import annotations

import base64
import io
import json
import re
import sys
from typing import Any

import pytest

from components.tpu.startup_script import render_startup_script
from tests.components.test_tpu_startup_script import SPEC

_SNIPPET = re.compile(r"fetch_secret\(\) \{\n  python3 - \"\$PROJECT\" \"\$1\" <<'PY'\n(.*?)\nPY\n", re.DOTALL)


def _fetch_secret_source() -> str:
    match = _SNIPPET.search(render_startup_script(SPEC))
    assert match is not None, "fetch_secret's Python snippet moved: update this test"
    return match.group(1)


def _run(payload: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """The snippet's stdout (the key), answering the token request and the secret access in turn."""
    answers = [
        {"access_token": "t"},
        {"payload": {"data": base64.b64encode(payload.encode()).decode()}},
    ]

    def urlopen(_request: Any, timeout: float) -> io.BytesIO:
        return io.BytesIO(json.dumps(answers.pop(0)).encode())

    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    monkeypatch.setattr(sys, "argv", ["-", "proj", "gemma-tpu-v6e-vllm-api-key"])
    exec(compile(_fetch_secret_source(), "fetch_secret", "exec"), {"__name__": "__main__"})  # noqa: S102 - the script's own code
    return capsys.readouterr().out


@pytest.mark.parametrize("payload", ["", "   ", "\n", "two\nlines"], ids=["empty", "blank", "newline", "multi-line"])
def test_an_empty_or_malformed_key_stops_the_boot(
    payload: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        _run(payload, monkeypatch, capsys)
    assert "is empty or spans several lines" in str(stopped.value.code)


def test_a_key_is_printed_for_the_env_file(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("k3y\n", monkeypatch, capsys) == "k3y"


def test_the_env_file_step_stops_when_the_key_cannot_be_read() -> None:
    """`write_env_file` returns 1 on fetch_secret's failure, and the boot stops before `docker run`."""
    script = render_startup_script(SPEC)
    assert 'key=$(fetch_secret "$API_KEY_SECRET") || return 1' in script
    assert re.search(r"if ! retry \d+ write_env_file; then", script)
