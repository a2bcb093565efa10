"""The policy reads a container's shell lines into words exactly as `shlex.split` would.

Why: the words decide what the policy sees (a literal `--api-key` in a job script, vLLM's batch flags in
an `sh -c` line); the reader is a regular expression because shlex took ~40 ms per plan on the weight
import jobs' scripts, and a reader that split a quoted value differently would hide a flag or invent one.
"""

from __future__ import annotations

import random
import shlex

import pytest

from job_scripts import script_source
from policy.vllm_args import _shell_words, flag_values, tokens


def _shlex_words(line: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(line))
    except ValueError:
        return tuple(line.split())


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        'vllm serve --api-key "se cret" --max-num-seqs=8',
        "a''b ''  c",
        "it's",
        '"unclosed',
        "trailing\\",
        'say "a \\" quote" and "\\\\" and "\\n kept"',
        "esc\\ aped\\\nnewline 'single \\ back'",
        "tab\tcr\rnl\nvt\x0bff\x0cend",
        "mixed\"dq\"'sq'plain\\x",
    ],
)
def test_shell_words_match_shlex_on_hand_written_lines(line: str) -> None:
    """Guards against a quoting case the policy reads differently from the shell (and from shlex)."""
    assert _shell_words(line) == _shlex_words(line)


def test_shell_words_match_shlex_on_random_lines() -> None:
    """Guards against a corner of quoting and escaping that the hand-written lines miss."""
    generator = random.Random(37)  # noqa: S311 - reproducible test lines, not secrets
    alphabet = ["a", "-", "=", " ", "  ", "\t", "\n", "\r", "'", '"', "\\", "x y", "\x0b"]
    for _ in range(3000):
        line = "".join(generator.choice(alphabet) for _ in range(generator.randint(0, 24)))
        assert _shell_words(line) == _shlex_words(line), repr(line)


def test_shell_words_match_shlex_on_the_weight_import_script() -> None:
    """Guards against the longest shell line a plan holds (the import job's script) read differently."""
    script = script_source()
    assert _shell_words(script) == _shlex_words(script)


def test_a_flag_inside_a_shell_line_is_found() -> None:
    """Guards against a literal API key hidden in an `sh -c` line escaping the plaintext-secret rule."""
    argv = tokens(["sh", "-c", "exec vllm serve --api-key 'plain text' --port=8000"])
    assert flag_values(argv, "--api-key") == ["plain text"]
