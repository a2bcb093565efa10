"""`verify bench --workers` and the trust gate, end to end through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import bench, running
from verify.bench import trust
from verify.bench.report import UNTRUSTED_MARK
from verify.bench.results import load_results


def test_workers_flag_spreads_the_users(tmp_path: Path) -> None:
    """Guards against --workers being accepted but ignored (one loop measuring everything)."""
    output = tmp_path / "r.jsonl"
    with running() as server:
        code = bench(server.url, output, "--workers", "2")
    assert code == 0
    records = load_results(output).records
    assert [r.client_workers for r in records] == [1, 2, 1, 2]  # a 1-user cell needs one worker
    assert all(r.success_rate == 1.0 and r.completed == 3 for r in records)


def test_an_untrusted_cell_fails_the_gate_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against a CI gate passing on numbers a saturated client produced, and against the mark
    missing from the results file or the report."""
    # Any loop lag at all counts as saturation, so this machine's client is "saturated" on purpose.
    monkeypatch.setattr(trust, "LAG_TO_TTFT_ERROR", 1e12)
    config = FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3, ttft_s=0.01)
    with running(config) as server:
        gated = bench(server.url, tmp_path / "a.jsonl", "--slo", "mean_ttft_ms=60000")
        allowed = bench(server.url, tmp_path / "b.jsonl", "--slo", "mean_ttft_ms=60000", "--allow-untrusted")
        # A success rate is a count of answers, which a saturated client still reports truthfully.
        counted = bench(server.url, tmp_path / "c.jsonl", "--slo", "success_rate=1")
    assert gated == 1
    assert "SLO not judged" in capsys.readouterr().err
    assert allowed == 0
    assert counted == 0
    records = load_results(tmp_path / "a.jsonl").records
    assert all(not r.trusted and r.untrusted_reason for r in records)
    assert all(any(w.startswith("untrusted, ") for w in r.warnings) for r in records)
    report = (tmp_path / "a.md").read_text()
    assert f"{UNTRUSTED_MARK} untrusted" in report
    assert f"{UNTRUSTED_MARK} |" in report  # the mark ends the cells' numbers in the matrices


@pytest.mark.parametrize(
    ("load", "why"),
    [
        (["--request-rate", "5"], "open-loop cells"),
        (["--find-max-rate", "--context", "16", "--slo", "mean_ttft_ms=100"], "open-loop cells"),
        (["--scenario", "multi-turn"], "multi-turn chat"),
    ],
)
def test_workers_a_run_cannot_use_are_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load: list[str], why: str
) -> None:
    """Guards against --workers being accepted but ignored: an open-loop or multi-turn run is sent from one
    process, and the user who asked for four learns so before anything is sent."""
    from verify.cli import main

    argv = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--output", str(tmp_path / "r.jsonl")]
    if "--context" not in load:
        argv += ["--context", "16"]
    code = main([*argv, *load, "--workers", "4"])
    message = capsys.readouterr().err
    assert code == 2
    assert "--workers 4" in message
    assert why in message
    assert not (tmp_path / "r.jsonl").exists()
