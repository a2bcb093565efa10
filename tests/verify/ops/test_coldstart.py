"""Cold-start phases from the log lines of a REAL vLLM 0.32.0 start (fixtures/coldstart/README.md says how)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.verify.ops.coldstart_entries import log_entries
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, ROOT
from tests.verify.ops.test_logs import ENTRIES
from tests.verify.ops.test_status import SERVICES
from verify.cli import main
from verify.ops import google as ops_google
from verify.ops.coldstart import ColdStart, Line, measure, milestone_filter
from verify.ops.google import API_ROOT_ENV
from verify.ops.logs import page_lines
from verify.ops.signatures import MILESTONES, match, milestone

PHASES = [
    "container start",
    "engine start",
    "weights",
    "compile and graph capture",
    "server start",
    "first passing probe",
]


def _measured(entries: list[dict[str, Any]], planned: int | None = None) -> ColdStart:
    lines = page_lines({"entries": entries})
    found = measure([Line(timestamp=x.timestamp, source=x.source, text=x.text) for x in lines], planned_bytes=planned)
    assert found is not None
    return found


def test_a_real_vllm_start_splits_into_every_phase() -> None:
    """A user reading `verify status` sees each phase of the real start with its duration, from the entries' times."""
    measured = _measured(log_entries("vllm-0.32.0-cpu-default-loader.log"))
    assert [phase.name for phase in measured.phases] == PHASES
    seconds = {phase.name: phase.seconds for phase in measured.phases}
    # 07:12:55 instance (added 15 s before) -> 07:13:10 vLLM's first line -> 07:13:38 "Starting to load model"
    # -> 07:13:38 "Loading weights took 0.03 seconds" -> 07:13:58 "init engine ... took 18.80 s" -> 07:14:00
    # "Application startup complete." -> 07:14:05 the probe (added 5 s after).
    assert seconds == {
        "container start": 15.0,
        "engine start": 28.0,
        "weights": 0.0,
        "compile and graph capture": 20.0,
        "server start": 2.0,
        "first passing probe": 5.0,
    }
    assert measured.total_s == 70.0
    assert measured.slowest.name == "engine start"
    assert measured.missing == []
    # vLLM printed "Checkpoint size: 0.00 GiB" for the tiny model: no size to divide by, so the plan's is used.
    assert measured.bytes_from is None


def test_the_streamer_ends_the_weights_phase_with_its_progress_bar() -> None:
    """runai_streamer prints no "Loading weights took": its 100% progress bar still closes the weights phase."""
    measured = _measured(log_entries("vllm-0.32.0-cpu-runai-streamer.log"), planned=11_290_000_000)
    weights = measured.phase("weights")
    assert weights is not None
    assert "Runai Model Streamer: 100%" in weights.ended_by
    assert measured.weight_bytes == 11_290_000_000
    assert measured.bytes_from == "the stack's plan (built-in profiles)"


def test_gpu_lines_give_bytes_compile_and_graph_capture() -> None:
    """On a GPU vLLM says how many GiB it loaded and how long torch.compile and graph capture took."""
    entries = log_entries("vllm-0.32.0-gpu-lines-from-source.log", instance_start_before_s=None, probe_after_s=None)
    measured = _measured(entries)
    assert [phase.name for phase in measured.phases] == ["weights", "compile and graph capture"]
    assert measured.phase("weights").seconds == 24.0  # type: ignore[union-attr]
    assert measured.weight_bytes == round(10.52 * 1024**3)
    assert measured.read_bytes_per_s == pytest.approx(10.52 * 1024**3 / 24.0)
    assert measured.torch_compile_s == 38.12
    assert measured.graph_capture_s == 14.0


def test_the_real_start_says_its_compile_cache_did_not_load() -> None:
    """The user sees whether the start reused torch.compile's cache: here the real 0.32.0 CPU start could not
    load what the first one saved, said why, and compiled again."""
    measured = _measured(log_entries("vllm-0.32.0-cpu-default-loader.log"))
    assert measured.compile_cache is not None
    assert measured.compile_cache.startswith("not loaded from /root/.cache/vllm/torch_compile_cache/torch_aot_compile/")
    assert "'function' object has no attribute 'finalize_loading'" in measured.compile_cache
    assert measured.compile_cache.endswith("compiled again and saved there")


def test_a_start_that_loaded_its_compile_cache_says_so() -> None:
    """With compileCache kept, a start of the same configuration loads the artifact instead of compiling."""
    entries = log_entries("vllm-0.32.0-gpu-lines-from-source.log", instance_start_before_s=None, probe_after_s=None)
    hit = dict(entries[2])  # beside torch.compile's line; vLLM's decorators.py "Directly load AOT compilation ..."
    path = "/var/cache/vllm/torch_compile_cache/torch_aot_compile/ab12/rank_0_0/model"
    hit["textPayload"] = (
        f"(Worker pid=412) INFO 11-24 09:01:50 [decorators.py:300] Directly load AOT compilation from path {path}"
    )
    measured = _measured([*entries[:2], hit, *entries[2:]])
    assert measured.compile_cache == f"loaded from {path} (no compile)"
    assert _measured(entries).compile_cache is None  # vLLM said nothing about the cache: nothing claimed


def test_a_missing_milestone_merges_its_phase_into_the_next() -> None:
    """Without vLLM's "Starting to load model" line the engine start and weights show as one phase, named so."""
    entries = [
        e for e in log_entries("vllm-0.32.0-cpu-default-loader.log") if "Starting to load" not in e["textPayload"]
    ]
    measured = _measured(entries)
    assert "engine start + weights" in [phase.name for phase in measured.phases]
    assert measured.missing == ["engine start"]


def test_only_the_newest_start_is_measured() -> None:
    """Two starts in the window (a restart): the phases are the newest one's, not a span across both."""
    old = log_entries("vllm-0.32.0-cpu-default-loader.log")
    new = log_entries("vllm-0.32.0-cpu-runai-streamer.log")
    measured = _measured([*old, *new])
    assert measured.started_at == new[0]["timestamp"]


def test_milestones_are_not_failures() -> None:
    """A startup line never shows up as a failure signature in `verify logs`, and every milestone cites a source."""
    for entry in log_entries("vllm-0.32.0-cpu-default-loader.log"):
        if milestone(entry["textPayload"]) is not None:
            assert match(entry["textPayload"]) is None
    assert all(item.source for item in MILESTONES)


def test_the_query_reads_only_milestone_lines_of_one_revision() -> None:
    """Request logs cannot push a start out of the page: the query names the milestone words and the revision."""
    query = milestone_filter('timestamp>="2026-11-24T00:00:00Z"', "gemma-l4-vllm-abc")
    assert 'textPayload:"Loading weights took"' in query
    assert 'textPayload:"Directly load AOT compilation"' in query  # the cache's outcome is read too
    assert 'resource.labels.revision_name="gemma-l4-vllm-abc"' in query


@pytest.fixture
def ready_l4(fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch) -> FakeGoogle:
    """`verify status --stack l4` as a user runs it, against a fake Google whose l4 revision is ready."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(API_ROOT_ENV, fake.url)
    monkeypatch.setattr(ops_google, "adc_tokens", lambda: tokens)
    fake.route("GET", SERVICES, {"services": [fixture("run_service_ready.json")]})
    return fake


def test_verify_status_prints_each_phase_with_its_duration(
    ready_l4: FakeGoogle, capsys: pytest.CaptureFixture[str]
) -> None:
    """`verify status` of a ready revision prints the cold start's phases, the total and the slowest phase."""
    ready_l4.route("POST", ENTRIES, {"entries": log_entries("vllm-0.32.0-cpu-default-loader.log")})
    code = main(["status", "--stack", "l4", "--project", PROJECT])
    out = capsys.readouterr().out
    assert code == 0
    for phase in PHASES:
        assert phase in out
    assert "70.0" in out
    assert "slowest: engine start" in out
    sent = next(seen.body for seen in ready_l4.seen if seen.path.endswith("entries:list"))
    assert "gemma-l4-vllm-service-3f2a1b7-00002-x7k" in sent["filter"]


def test_verify_status_still_answers_when_logs_cannot_be_read(
    ready_l4: FakeGoogle, capsys: pytest.CaptureFixture[str]
) -> None:
    """No logging.viewer: the rollout state and exit code stand; the cold start says it was not measured."""
    ready_l4.fail("POST", ENTRIES, "error_permission_denied.json")
    code = main(["status", "--stack", "l4", "--project", PROJECT])
    assert code == 0
    assert "cold start not measured" in capsys.readouterr().out
