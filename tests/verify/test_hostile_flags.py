"""Flags pasted wrong, as a new user (or an agent) would: refused with a clear line, no traceback, and never
echoing what might be a secret."""

from __future__ import annotations

import pytest

from verify.cli import main

PASTED_KEYS = [
    "sk-live-0123456789abcdefghijABCDEFGH",
    "hf_" + "a1B2c3D4e5" * 4,
    "AKIAABCDEFGHIJKLMNOP",
    "not a name: s3cr3t-v@lue",
]


@pytest.mark.parametrize("pasted", PASTED_KEYS)
@pytest.mark.parametrize("command", ["health", "bench"])
def test_a_key_pasted_into_api_key_env_is_refused_without_being_echoed(
    command: str, pasted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key pasted into --api-key-env (instead of the variable's name) was printed twice, with a suggested
    `export <key>=...` line, into CI logs."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--url", "http://127.0.0.1:9", "--api-key-env", pasted])
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert pasted not in captured.out + captured.err
    assert "--api-key-env" in captured.err
    assert "VLLM_API_KEY" in captured.err


def test_a_variable_name_is_still_accepted() -> None:
    """The refusal must not catch real names: the flag is parsed and the run goes on to the unset variable."""
    from verify.argtypes import env_var_name

    assert env_var_name("--api-key-env")("MY_VLLM_KEY_2") == "MY_VLLM_KEY_2"


@pytest.mark.parametrize("command", ["health", "bench"])
def test_a_url_with_user_and_password_is_refused_without_echoing_them(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--url http://user:pass@host` crashed in aiohttp with a traceback (and the password in it)."""
    code = main([command, "--url", "http://admin:hunter2secret@127.0.0.1:9"])
    captured = capsys.readouterr()
    assert code == 2
    assert "hunter2secret" not in captured.out + captured.err
    assert "user:password@" in captured.err
    assert "Traceback" not in captured.err


def test_an_endpoints_text_cannot_rewrite_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """A server whose model name carries clear-screen and cursor sequences: health shows them as text."""
    from tests.fake_vllm import FakeVllmConfig
    from tests.verify.bench.test_cli import running

    config = FakeVllmConfig(served_name="evil\x1b[2J\x1b[1A\x1b]52;c;aGk=\x07")
    with running(config) as server:
        code = main(["health", "--url", server.url, "--model", "tiny-gemma", "--wait", "5"])
    out = capsys.readouterr().out
    assert code == 1
    assert "\x1b" not in out
    assert "\\x1b[2J" in out
