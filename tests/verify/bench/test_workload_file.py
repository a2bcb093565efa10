"""`bench --workload FILE`: the advise workload file as the sweep's cells (its live replay: test_live.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from verify import UsageError
from verify.bench.cli import workload_options
from verify.cli import build_parser


def _args(argv: list[str]) -> object:
    return build_parser("bench").parse_args(["bench", "--url", "http://127.0.0.1:1", *argv])


def test_the_workload_file_becomes_the_sweeps_cells() -> None:
    """The team's workload file gives one cell per request kind at its full prompt (2,000-token system prompt and
    the mean history of 6 turns), the mean output, and its ten users."""
    workload = workload_options(_args(["--workload", str(ROOT / "examples/workloads/coding-team.yaml")]))  # type: ignore[arg-type]
    history = round(5 / 2 * ((1500 + 300) * 0.8 + (6000 + 800) * 0.2))
    assert workload.context == (1500 + 2000 + history, 6000 + 2000 + history)
    assert workload.max_tokens == 400
    assert workload.concurrency == (10,)


def test_a_workload_file_and_workload_flags_are_not_mixed(tmp_path: Path) -> None:
    """`--workload FILE --context 64` would be two workloads: a usage error naming the flag."""
    with pytest.raises(UsageError, match="--context"):
        workload_options(_args(["--workload", str(ROOT / "examples/workloads/coding-team.yaml"), "--context", "64"]))  # type: ignore[arg-type]
