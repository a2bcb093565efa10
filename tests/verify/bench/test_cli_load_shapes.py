"""The open-loop, scenario and max-rate flags refuse what they cannot measure, naming the flag (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.cli import main


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--request-rate", "5", "--concurrency", "4"], "with --request-rate the load is the rate"),
        (["--request-rate", "0"], "--request-rate must be more than 0"),
        (["--find-max-rate", "--context", "64"], "--find-max-rate needs a latency --slo"),
        (["--find-max-rate", "--slo", "p95_ttft_ms=9", "--context", "64,128"], "one --context at a time"),
        (
            ["--find-max-rate", "--slo", "p95_ttft_ms=9", "--context", "64", "--rate-tolerance", "2"],
            "--rate-tolerance must be",
        ),
        (["--scenario", "multi-turn", "--api", "completions"], "multi-turn needs --api chat"),
        (["--scenario", "shared-prefix", "--context", "128", "--prefix-tokens", "256"], "longer than --prefix-tokens"),
    ],
)
def test_impossible_load_shapes_exit_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """Guards against a run that silently measures something else than the flags asked for."""
    argv = ["bench", "--url", "http://127.0.0.1:9", "--output", str(tmp_path / "r.jsonl"), *flags]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(str(exit_.code))
    assert code == 2
    assert message in capsys.readouterr().err
