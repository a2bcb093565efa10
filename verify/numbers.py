"""Numbers as verify prints them: one set of rules for the console, Markdown, charts and CSV.

Why one module: ``f"{x:.4g}"`` printed a throughput of 16,930 tok/s as ``1.693e+04`` in the tables a
person reads after a rollout. Every place that shows a number to a person calls :func:`readable`;
files other programs read (CSV) call :func:`plain`, which keeps more precision and no separators.
"""

from __future__ import annotations

import math

# Three significant digits is what a reader compares at a glance; whole units are never rounded away
# (16,934 stays 16,934, not 16,900), since a table that rounds 1,950 ms to 2,000 ms hides changes.
READABLE_DIGITS = 3
# The CSV keeps six, enough for any spreadsheet formula without printing float noise (0.30000000000000004).
PLAIN_DIGITS = 6


def _decimals(value: float, digits: int) -> int:
    """How many decimals show ``digits`` significant digits of ``value`` (0 at or above 10**(digits-1))."""
    if value == 0:
        return 0
    return max(0, digits - 1 - math.floor(math.log10(abs(value))))


def _trim(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def readable(value: float | None, *, missing: str = "-") -> str:
    """``16,934``, ``583``, ``64``, ``1.95``, ``0.114``, ``0.00123``: never an exponent, thousands grouped.

    ``missing`` stands in for None (no measurement), so an empty cell is told apart from a zero.
    """
    if value is None:
        return missing
    if not math.isfinite(value):
        return str(value)
    return _trim(f"{value:,.{_decimals(value, READABLE_DIGITS)}f}")


def plain(value: float | None) -> str:
    """For CSV: no exponent and no thousands separator (a comma would split the column); empty for None."""
    if value is None or not math.isfinite(value):
        return ""
    return _trim(f"{value:.{_decimals(value, PLAIN_DIGITS)}f}")


def percent(fraction: float | None, *, missing: str = "-") -> str:
    """A rate such as a success rate: ``0.875`` -> ``87.5%`` (one decimal: 99.9% is not 100%)."""
    if fraction is None:
        return missing
    return f"{fraction * 100:.1f}%"


def signed_percent(change: float) -> str:
    """A relative change: ``+60%``, ``-0.7%``, ``+1,234%``; one decimal below 10%, where noise lives."""
    shown = change * 100
    if abs(shown) >= 10:  # where a decimal stops helping the reader
        return f"{shown:+,.0f}%"
    return f"{shown:+.1f}%"
