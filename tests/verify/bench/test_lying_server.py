"""A server whose answers contradict themselves: `bench` fails those requests instead of reporting their numbers.

Red team (issue 46): chunks answered by another model were accepted, a usage chunk of 0 completion tokens beside
8 streamed text chunks gave 0 tok/s at 100% success, and 100,000 prompt tokens were accepted for a 64-token
prompt, each with exit 0. Each test runs the real `gemma-verify bench` against tests/fake_vllm.py scripted to
tell that lie, and asserts the cell records the failure class and the run exits 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify.bench.results import load_results
from verify.cli import main

ONE_CELL = ["--concurrency", "1", "--context", "64", "--max-tokens", "8", "--requests", "3", "--warmup", "0"]
PIECES = tuple(f" w{index}" for index in range(8))


def _bench(url: str, output: Path, *extra: str) -> int:
    return main(["bench", "--url", url, *ONE_CELL, "--no-progress", "--output", str(output), *extra])


@pytest.mark.parametrize(
    ("lie", "kind"),
    [
        ({"chunk_model": "gemma-4-31b-it"}, "wrong_model"),
        ({"usage_completion_tokens": 0}, "malformed_stream"),
        ({"usage_prompt_tokens": 100_000}, "malformed_stream"),
    ],
)
def test_a_lying_server_fails_its_requests_and_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lie: dict[str, object], kind: str
) -> None:
    """Another model's chunks, usage that contradicts the chunks, and prompt tokens far from the 64 sent: every
    request fails with its class (the numbers are not taken), and the default success gate exits 1."""
    output = tmp_path / "lie.jsonl"
    config = FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3, pieces=PIECES, **lie)  # type: ignore[arg-type]
    with running(config) as server:
        code = _bench(server.url, output, "--model", "tiny-gemma")
    assert code == 1
    (record,) = load_results(output).records
    assert record.completed == 0
    assert record.errors == {kind: 3}
    assert record.total_output_tokens == 0
    assert kind in capsys.readouterr().out


def test_an_alias_of_the_served_model_is_measured(tmp_path: Path) -> None:
    """Benchmarking the second --served-model-name (answered under the first, as vLLM does) is the same model."""
    output = tmp_path / "alias.jsonl"
    config = FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3, pieces=PIECES, aliases=("gemma",))
    with running(config) as server:
        code = _bench(server.url, output, "--model", "gemma", "--allow-untrusted")
    assert code == 0
    (record,) = load_results(output).records
    assert record.completed == 3
    assert record.errors == {}


HOSTILE = "tiny\x1b[2J\x1b]52;c;ZXZpbA==\x07\nFAKE: all clear"


def _clean(printed: str) -> None:
    assert "\x1b" not in printed
    assert "\x07" not in printed
    assert "\nFAKE" not in printed


def test_a_hostile_served_name_reaches_the_terminal_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A served name carrying clear-screen, clipboard and a forged line is the server's text: `bench`, then `compare`
    of its file, and the N-way matrix print it as visible escapes (and the chunks naming it are its own)."""
    output = tmp_path / "hostile.jsonl"
    config = FakeVllmConfig(served_name=HOSTILE, count_prompt_words=True, chat_template_tokens=3, pieces=PIECES)
    with running(config) as server:
        code = _bench(server.url, output, "--model", HOSTILE, "--allow-untrusted", "--slo", "mean_ttft_ms=0.001")
    assert code == 1
    (record,) = load_results(output).records
    assert record.model == HOSTILE  # the file keeps what the server said; only the terminal gets escapes
    assert main(["compare", str(output), str(output)]) == 0
    other = tmp_path / "other.jsonl"
    other.write_bytes(output.read_bytes())
    assert main(["compare", str(output), str(other), "--matrix"]) == 0
    captured = capsys.readouterr()
    _clean(captured.out + captured.err)
    assert "tiny\\x1b[2J" in captured.err + captured.out
