"""Read what a container's command line tells vLLM, without importing vLLM or the project's settings.

Why its own reader: the policy pack runs in its own environment (only pulumi-policy installed) and must
judge whatever a stack renders, including hand-written container args, so it reads the argument list the
way vLLM's parser would: `--flag value`, `--flag=value`, and underscores spelled for dashes.
"""

from __future__ import annotations

import functools
import shlex
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


@functools.lru_cache(maxsize=32)
def _shell_words(line: str) -> tuple[str, ...]:
    """A shell line's words. Cached: a plan's weight-import jobs each carry the same ~28 kB script, and
    `shlex` reads it a character at a time (about 40 ms a copy, most of a plan's policy check)."""
    try:
        return tuple(shlex.split(line))
    except ValueError:
        return tuple(line.split())


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
