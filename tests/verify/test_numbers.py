"""How verify prints numbers: the same rules in the console, Markdown, charts and CSV."""

from __future__ import annotations

import pytest

from verify.numbers import percent, plain, readable, signed_percent


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (16934.37, "16,934"),
        (1_234_567.8, "1,234,568"),
        (583.333, "583"),
        (64.0, "64"),
        (38.4, "38.4"),
        (1.95, "1.95"),
        (0.5, "0.5"),
        (0.11393, "0.114"),
        (0.0012345, "0.00123"),
        (9.996, "10"),
        (0.0, "0"),
        (-0.7, "-0.7"),
        (None, "-"),
    ],
)
def test_readable_never_prints_an_exponent(value: float | None, shown: str) -> None:
    """Guards against ``1.693e+04`` for a throughput in a table a person reads at a glance."""
    assert readable(value) == shown


def test_plain_is_for_csv_no_separator_no_exponent_more_digits() -> None:
    """Guards against a CSV whose thousands comma splits a column, or whose 4-digit rounding loses data."""
    assert plain(16934.37) == "16934.4"
    assert plain(123456789.0) == "123456789"
    assert plain(0.000012345) == "0.000012345"
    assert plain(0.1 + 0.2) == "0.3"
    assert plain(None) == ""


def test_percentages() -> None:
    """Guards against a 99.9% success rate shown as 100% and a change's sign left off."""
    assert percent(0.999) == "99.9%"
    assert percent(None) == "-"
    assert signed_percent(0.6) == "+60%"
    assert signed_percent(-0.007) == "-0.7%"
    assert signed_percent(12.34) == "+1,234%"
