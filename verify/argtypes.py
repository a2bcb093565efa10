"""argparse types for the numbers (and variable names) verify's flags take, each message naming the flag.

Why one module: every subcommand (health, bench, compare, the benchmarks' scripts) takes seconds,
counts and lists, and a value argparse accepts is a value the run relies on. ``float()`` alone
accepts ``nan`` and ``inf``, and a wait of ``nan`` seconds never ends, so numbers here are finite.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from policy.credentials import credential_kind

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def env_var_name(flag: str) -> Callable[[str], str]:
    """The NAME of an environment variable; a value that is not one is refused without being echoed.

    Why never echoed: the common mistake is pasting the key itself (`--api-key-env sk-...`), and the message
    lands in a terminal's scrollback or a CI log. A name that is credential-shaped (`hf_...`, `AKIA...`) is a
    pasted key too.
    """

    def parse(value: str) -> str:
        if credential_kind(value) is not None:
            raise argparse.ArgumentTypeError(
                f"{flag} takes the NAME of the environment variable holding the key (e.g. VLLM_API_KEY), but the "
                "value given looks like a credential itself; it is not shown here. Put the key in a variable "
                f"(`read -rs VLLM_API_KEY && export VLLM_API_KEY`) and pass {flag} VLLM_API_KEY"
            )
        if not _ENV_NAME.fullmatch(value):
            raise argparse.ArgumentTypeError(
                f"{flag} takes an environment variable's name (letters, digits and _, not starting with a digit), "
                "e.g. VLLM_API_KEY; the value given is not one (not shown, in case it is the key itself)"
            )
        return value

    return parse


def positive_number(flag: str, unit: str = "") -> Callable[[str], float]:
    """A finite number above zero; the message names the flag (and the unit, if any)."""
    return _finite_number(flag, unit, zero_allowed=False)


def non_negative_number(flag: str, unit: str = "") -> Callable[[str], float]:
    """A finite number of 0 or more (``--wait 0``: look once, do not wait)."""
    return _finite_number(flag, unit, zero_allowed=True)


def _finite_number(flag: str, unit: str, *, zero_allowed: bool) -> Callable[[str], float]:
    what = f"{unit} as a number" if unit else "a number"
    zero = f"0 {unit}" if unit else "0"
    bound = f"{zero} or more" if zero_allowed else f"more than {zero}"

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes {what}, got {value!r}") from None
        if not math.isfinite(number):
            raise argparse.ArgumentTypeError(f"{flag} takes a finite number, got {value!r}")
        if number < 0 or (number == 0 and not zero_allowed):
            raise argparse.ArgumentTypeError(f"{flag} must be {bound}, got {value!r}")
        return number

    return parse


def positive_int(flag: str, *, minimum: int = 1) -> Callable[[str], int]:
    """A whole number of at least ``minimum``; the message names the flag."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{flag} must be at least {minimum}, got {value!r}")
        return number

    return parse


def positive_int_list(flag: str) -> Callable[[str], tuple[int, ...]]:
    """Comma-separated whole numbers of at least 1 (duplicates dropped, order kept)."""

    def parse(value: str) -> tuple[int, ...]:
        try:
            numbers = tuple(int(part) for part in value.split(",") if part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} takes comma-separated whole numbers, e.g. 1,8,32; got {value!r}"
            ) from None
        if not numbers or any(number < 1 for number in numbers):
            raise argparse.ArgumentTypeError(f"{flag} needs numbers of at least 1, got {value!r}")
        return tuple(dict.fromkeys(numbers))

    return parse


def positive_number_list(flag: str, unit: str = "") -> Callable[[str], tuple[float, ...]]:
    """Comma-separated finite numbers above zero (duplicates dropped, order kept), e.g. request rates."""
    one = positive_number(flag, unit)

    def parse(value: str) -> tuple[float, ...]:
        numbers = tuple(one(part.strip()) for part in value.split(",") if part.strip())
        if not numbers:
            raise argparse.ArgumentTypeError(f"{flag} takes comma-separated numbers, e.g. 5,10,20; got {value!r}")
        return tuple(dict.fromkeys(numbers))

    return parse
