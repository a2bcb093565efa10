"""`adapters list` and `adapters check` against a server whose text is hostile: no crash, no raw escape reaches the
terminal.

Red team (issue 46): a `max_lora` label of `²` crashed `adapters list` with a ValueError traceback (`str.isdigit`
accepts it, `int` does not), and terminal escapes in a served name reached the terminal from both commands (a
clear-screen, an OSC 52 clipboard write, a newline forging a line of the report). Each test runs the real command
against tests/fake_vllm.py on 127.0.0.1 scripted to say that.
"""

from __future__ import annotations

import pytest

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify.cli import main

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
FORGED = "\nFAKE: all clear"
HOSTILE = f"base{CLEAR}{CLIPBOARD}{FORGED}"


def _lora_metrics(max_lora: str) -> str:
    labels = f'max_lora="{max_lora}",running_lora_adapters="a{CLEAR}",waiting_lora_adapters=""'
    return (
        "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
        "# TYPE vllm:lora_requests_info gauge\n"
        f"vllm:lora_requests_info{{{labels}}} 1.7e+09\n"
    )


def _clean(printed: str) -> None:
    assert "\x1b" not in printed
    assert "\x07" not in printed
    assert "\nFAKE" not in printed
    assert "Traceback" not in printed


@pytest.mark.parametrize("max_lora", ["²", "٣", "1" * 40, "4"])
def test_adapters_list_survives_any_max_lora_label(max_lora: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A label that is not a small ASCII count is shown as unknown; a real one is the GPU slots."""
    with running(FakeVllmConfig(metrics_body=_lora_metrics(max_lora))) as server:
        code = main(["adapters", "list", "--url", server.url])
    captured = capsys.readouterr()
    assert code == 0
    _clean(captured.out + captured.err)
    assert ("GPU slots (--max-loras): 4" in captured.out) == (max_lora == "4")


def test_adapters_list_escapes_the_servers_names(capsys: pytest.CaptureFixture[str]) -> None:
    """The base model's served name is shown with its controls as visible escapes, on its own line."""
    with running(FakeVllmConfig(served_name=HOSTILE, metrics_body=_lora_metrics("4"))) as server:
        code = main(["adapters", "list", "--url", server.url])
    captured = capsys.readouterr()
    assert code == 0
    _clean(captured.out + captured.err)
    assert "base\\x1b[2J" in captured.out


def test_adapters_check_escapes_the_servers_names(capsys: pytest.CaptureFixture[str]) -> None:
    """The base the server lists, and the model its chunks name, are printed escaped in the check's verdict."""
    config = FakeVllmConfig(served_name=HOSTILE, lora_adapters=("support-bot",), chunk_model=f"other{CLEAR}")
    with running(config) as server:
        code = main(["adapters", "check", "support-bot", "--url", server.url, "--max-tokens", "4"])
    captured = capsys.readouterr()
    assert code == 1  # answered under another model's name: not the adapter
    _clean(captured.out + captured.err)
    assert "on base\\x1b[2J" in captured.out
    assert "the answer came from other\\x1b[2J" in captured.out
