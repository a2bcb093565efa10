"""`gemma-verify alerts suggest`: thresholds from a real sweep, as a snippet that previews cleanly when pasted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from preview.render import clean
from tests.conftest import ROOT, render_stack_at
from verify import UsageError
from verify.alerts.suggest import (
    Slo,
    SloMissedEverywhereError,
    SuggestOptions,
    stack_snippet,
    suggest,
    suggest_from_file,
)
from verify.bench.results import CellRecord, load_results
from verify.cli import main

REAL_SWEEP = Path(__file__).parent / "data" / "vllm-cpu-sweep.jsonl"
ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["alerts", "suggest", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_real_cpu_sweep_gives_a_snippet_that_previews_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a results file from the real vLLM CPU server, the printed block, pasted into a stack file, loads and
    renders: its alerts use the suggested thresholds (a snippet that fails the preview would be worse than none)."""
    # 16 requests per cell: a median (6 needed) can be judged, a p99 (368) cannot.
    code, snippet, _ = run_cli(
        capsys, "--from", str(REAL_SWEEP), "--ttft-ms", "250", "--percentile", "50", "--max-num-seqs", "4",
        "--allow-untrusted",
    )  # fmt: skip
    assert code == 0
    assert "held at concurrency 4" in snippet
    assert "broke at 16" in snippet
    assert "3 cell(s) untrusted" in snippet
    assert "ttftSeconds: 0.1\n" in snippet
    assert "maxWaitingRequests: 12\n" in snippet
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    stack_file = (ROOT / "Pulumi.l4.yaml").read_text(encoding="utf-8")
    (tmp_path / "Pulumi.pasted.yaml").write_text(stack_file.rstrip("\n") + "\n" + snippet, encoding="utf-8")
    capture = render_stack_at(tmp_path, "pasted")
    queries = {policy.name.rsplit("-alert-", 1)[-1]: clean(policy.inputs) for policy in capture.of_type(ALERT_POLICY)}
    ttft = queries["ttft-slo-warning"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
    assert 'le="0.1"' in ttft
    waiting = queries["waiting-requests"]["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
    assert waiting.endswith("> 12")


def test_untrusted_cells_are_refused_unless_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    """Latencies a CPU-starved load generator measured are not the server's: used only when asked, and said."""
    code, out, err = run_cli(capsys, "--from", str(REAL_SWEEP))
    assert code == 2
    assert out == ""
    assert "--allow-untrusted" in err


def test_a_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--from", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert "no such file" in err


def cell(concurrency: int, p99_ttft_ms: float, p99_tpot_ms: float = 20.0) -> CellRecord:
    return CellRecord(
        status="measured",
        timestamp="2026-11-24T00:00:00Z",
        model="m",
        api="chat",
        requested_context=1024,
        max_concurrency=concurrency,
        max_tokens=128,
        num_prompts=400,
        completed=400,
        p99_ttft_ms=p99_ttft_ms,
        median_ttft_ms=p99_ttft_ms / 2,
        p99_tpot_ms=p99_tpot_ms,
        success_rate=1.0,
    )


def test_thresholds_come_from_the_held_load_and_stay_within_the_slo() -> None:
    """Held at 32 (p99 TTFT 420 ms, TPOT 38 ms), broke at 64: TTFT 0.5 s and TPOT 50 ms are the buckets just
    above what the held load showed; 64 users with a batch of 48 leave 16 waiting."""
    sweep = [cell(1, 120), cell(8, 200, 30), cell(32, 420, 38), cell(64, 2400, 90)]
    found = suggest(sweep, Slo(), max_num_seqs=48)
    assert (found.held, found.broke) == (32, 64)
    assert (found.ttft_seconds, found.tpot_seconds) == (0.5, 0.05)
    assert found.max_queue_seconds == pytest.approx(0.5 - 0.06)
    assert found.max_waiting_requests == 16
    # A held p99 above every bucket within the SLO is capped at the SLO's own bound.
    assert suggest([cell(1, 990)], Slo()).ttft_seconds == 1.0


def test_a_stack_that_misses_its_slo_everywhere_gets_no_thresholds() -> None:
    with pytest.raises(SloMissedEverywhereError, match="lowest concurrency measured"):
        suggest([cell(1, 1500), cell(4, 3000)], Slo())


def test_the_typed_function_gives_the_commands_thresholds() -> None:
    """Guards against a tool (no argv) deriving other thresholds than `alerts suggest` prints from the same
    file and options, and against unusable files passing silently."""
    options = SuggestOptions(slo=Slo(ttft_ms=250, percentile=50), max_num_seqs=4, allow_untrusted=True)
    suggestion = suggest_from_file(REAL_SWEEP, options)
    assert (suggestion.held, suggestion.broke, suggestion.untrusted) == (4, 16, 3)
    assert suggestion.ttft_seconds == 0.1
    assert suggestion.max_waiting_requests == 12
    with pytest.raises(UsageError, match="--allow-untrusted"):
        suggest_from_file(REAL_SWEEP, SuggestOptions())


def test_an_slo_between_bucket_bounds_says_which_bound_the_alert_uses(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against `--ttft-ms 2000` silently becoming a 1.0 s alert: vLLM's TTFT buckets go 1.0, 2.5, so the
    threshold is 1.0 s and the snippet says why (and an SLO on a bucket bound gets no such note)."""
    slow = [
        record.model_copy(
            update={"p99_ttft_ms": 1500.0, "p99_e2el_ms": max(record.p99_e2el_ms or 0.0, 1600.0), "completed": 400}
        )
        for record in load_results(REAL_SWEEP).records
        if record.measured
    ]
    slo = Slo(ttft_ms=2000.0)
    suggestion = suggest(slow, slo, allow_untrusted=True)
    assert suggestion.ttft_seconds == 1.0
    snippet = stack_snippet(suggestion, slo, source="x.jsonl")
    assert "TTFT bound 2 s is not a bucket bound" in snippet
    assert "2.5 s above" in snippet
    assert "measured 1.5 s" in snippet
    # Where the measurement itself sets the threshold (0.5 s here), nothing is capped and nothing is said.
    code, measured, _ = run_cli(
        capsys, "--from", str(REAL_SWEEP), "--ttft-ms", "2000", "--percentile", "50", "--allow-untrusted"
    )
    assert code == 0
    assert "ttftSeconds: 0.5\n" in measured
    assert "not a bucket bound" not in measured


def test_the_percentile_the_user_gave_is_the_one_read(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against an SLO on p95 judged on the sweep's p99 (a stricter, different number)."""
    records = [record for record in load_results(REAL_SWEEP).records if record.measured]
    cell = records[0]
    assert Slo(percentile=95).ttft(cell) == cell.p95_ttft_ms
    assert Slo(percentile=50).ttft(cell) == cell.median_ttft_ms
    code, snippet, _ = run_cli(
        capsys, "--from", str(REAL_SWEEP), "--ttft-ms", "250", "--percentile", "50", "--allow-untrusted"
    )
    assert code == 0
    assert "SLO p50 TTFT <= 250 ms, p50 TPOT <= 100 ms" in snippet


def test_a_percentile_the_sweep_is_too_thin_for_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against alerts derived from a "p95" of 16 requests (the slowest one of 16): refused, naming the
    count the percentile needs and the one the sweep supports."""
    code, out, err = run_cli(
        capsys, "--from", str(REAL_SWEEP), "--ttft-ms", "250", "--percentile", "95", "--allow-untrusted"
    )
    assert code == 2
    assert out == ""
    assert "a p95 needs 72 completed requests per cell" in err
    assert "3 of 3 cells have fewer (concurrency 1: 16)" in err
    assert "--requests 72, or derive from --percentile 50" in err


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "0", "1e308"])
@pytest.mark.parametrize("flag", ["--ttft-ms", "--tpot-ms"])
def test_an_slo_bound_that_is_not_finite_or_sane_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    """Red team: `--ttft-ms inf` made every cell "held" and derived thresholds from an SLO that cannot be
    missed. The flag is refused (exit 2) with its name; nothing is printed to paste."""
    with pytest.raises(SystemExit) as stopped:
        run_cli(capsys, "--from", str(REAL_SWEEP), flag, value)
    assert stopped.value.code == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize(("ttft", "tpot"), [(float("inf"), 100.0), (1000.0, float("nan")), (-1.0, 100.0)])
def test_the_typed_slo_refuses_what_the_flags_refuse(ttft: float, tpot: float) -> None:
    """A caller without argv (a tool) gets the same refusal, naming the flag it maps to."""
    with pytest.raises(UsageError, match="must be a finite number"):
        Slo(ttft_ms=ttft, tpot_ms=tpot)


def test_a_results_file_name_cannot_inject_yaml_into_the_snippet(tmp_path: Path) -> None:
    """Red team: a results file named `x.jsonl\\n  gemma-serving:apiKey: evil\\n` wrote its own key into the
    snippet the user pastes into a stack file. The snippet is emitted by a YAML emitter; the name stays in one
    comment line, quoted and escaped, and the pasted block parses to exactly the monitoring thresholds."""
    options = SuggestOptions(slo=Slo(ttft_ms=250, percentile=50), max_num_seqs=4, allow_untrusted=True)
    suggestion = suggest_from_file(REAL_SWEEP, options)
    hostile = "x.jsonl\n  gemma-serving:apiKey: evil\n  gemma-serving:monitoring:\n    enabled: false\x1b[2J"
    snippet = stack_snippet(suggestion, options.slo, source=hostile)
    parsed = yaml.safe_load("config:\n" + snippet)
    assert parsed == {
        "config": {
            "gemma-serving:monitoring": {
                "thresholds": {
                    "ttftSeconds": 0.1,
                    "tpotSeconds": 0.01,
                    "maxQueueSeconds": 0.058,
                    "maxWaitingRequests": 12,
                }
            }
        }
    }
    assert "\x1b" not in snippet
    comment = snippet.splitlines()[0]
    assert comment.startswith('  # From "x.jsonl\\n  gemma-serving:apiKey: evil')
