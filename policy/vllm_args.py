"""Read what a container's command line tells vLLM, without importing vLLM or the project's settings.

Why its own reader: the policy pack runs in its own environment (only pulumi-policy installed) and must
judge whatever a stack renders, including hand-written container args, so it reads the argument list the
way vLLM's parser would: `--flag value`, `--flag=value`, and underscores spelled for dashes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def tokens(parts: Iterable[str]) -> list[str]:
    """Flatten container `commands` + `args` into argv tokens; an element holding a whole shell line
    (e.g. `sh -c "vllm serve ..."`) is split the way the shell would split it."""
    result: list[str] = []
    for part in parts:
        if any(space in part for space in (" ", "\n", "\t")):
            result.extend(_shell_words(part))
        else:
            result.append(part)
    return result


# One piece of a POSIX shell word, as `shlex.split` reads it: whitespace between words, a single-quoted
# run, a double-quoted run (backslash escapes only `"` and `\\` there), a backslash-escaped character, or
# a run of plain characters. Whitespace is shlex's (space, tab, CR, LF), not `\s`.
_PIECE = re.compile(
    r"(?P<space>[ \t\r\n]+)"
    r"|'(?P<single>[^']*)'"
    r'|"(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"'
    r"|\\(?P<escaped>.)"
    r"""|(?P<plain>[^ \t\r\n'"\\]+)""",
    re.DOTALL,
)
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\(["\\])')


@functools.lru_cache(maxsize=32)
def _shell_words(line: str) -> tuple[str, ...]:
    """A shell line's words, as `shlex.split(line)` returns them (`line.split()` when shlex would refuse it:
    an unclosed quote or a trailing backslash). Read by one regular expression, not with `shlex`, which
    reads a character at a time: a plan's weight-import jobs each carry a ~28 kB script, and shlex took
    about 40 ms a plan to read them (tests/policy/test_vllm_args.py holds the two to the same words)."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    position = 0
    for piece in _PIECE.finditer(line):
        if piece.start() != position:
            break  # an unclosed quote or a lone trailing backslash: no piece matches there
        position = piece.end()
        kind = piece.lastgroup
        if kind == "space":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            continue
        in_word = True
        text = piece.group(kind or "plain")
        word.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", text) if kind == "double" else text)
    if position != len(line):
        return tuple(line.split())
    if in_word:
        words.append("".join(word))
    return tuple(words)


def _normalise(flag: str) -> str:
    return "--" + flag.removeprefix("--").replace("_", "-")


def flag_values(argv: list[str], flag: str) -> list[str]:
    """Every value given to `flag` (the last one wins in vLLM, but all are returned)."""
    wanted = _normalise(flag)
    values: list[str] = []
    for index, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, equals, inline = token.partition("=")
        if _normalise(name) != wanted:
            continue
        if equals:
            values.append(inline)
        elif index + 1 < len(argv):
            values.append(argv[index + 1])
        else:
            values.append("")
    return values


def has_flag(argv: list[str], flag: str) -> bool:
    wanted = _normalise(flag)
    return any(_normalise(token.partition("=")[0]) == wanted for token in argv if token.startswith("--"))


def looks_like_vllm(image: str | None, argv: list[str]) -> bool:
    """A container that runs vLLM: a vLLM image, a `vllm` command, or vLLM-only flags in its args."""
    if image and "vllm" in image.lower():
        return True
    if any(part == "vllm" or part.endswith("/vllm") for part in argv):
        return True
    return has_flag(argv, "--max-num-seqs") or has_flag(argv, "--served-model-name")
