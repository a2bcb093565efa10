"""`bench collect` fed the folders users really hand it: a run copied twice, two runs in one folder, lines
repeated or edited, a FIFO and a README. Each gives the exact clean result or exit 2 naming file:line.

The task files are two real runs of the job's tasks against the vLLM CPU server (data/real/task-run).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from verify.bench.cloud import FileBarrier, merged_records
from verify.bench.judgement import accelerator_facts
from verify.bench.results import CellRecord, load_results
from verify.bench.share_lines import CollectError, read_shares
from verify.cli import main

RUNS = Path(__file__).parent / "data" / "real" / "task-run"
RUN_A = "run-20261124-081500"
RUN_B = "run-20261124-081600"
Edit = Callable[[dict[str, Any]], None]


def _numbers(records: list[CellRecord]) -> list[dict[str, Any]]:
    return [record.model_dump(exclude={"timestamp"}) for record in records]


def _copy(tmp_path: Path, run: str = RUN_A, into: str = "run") -> Path:
    return Path(shutil.copytree(RUNS / run, tmp_path / into))


def _collect(directory: Path, output: Path, *extra: str) -> int:
    return main(["bench", "collect", str(directory), "--output", str(output), *extra])


@pytest.fixture(scope="module")
def clean() -> list[dict[str, Any]]:
    """The run's cells as collected from its folder untouched."""
    return _numbers(merged_records(read_shares(RUNS / RUN_A)))


def test_a_clean_run_merges_into_its_two_cells(clean: list[dict[str, Any]]) -> None:
    """Guards against the real files failing their own checks, or the merge losing a task's samples."""
    assert [(c["requested_context"], c["max_concurrency"], c["completed"], c["client_workers"]) for c in clean] == [
        (16, 1, 4, 1),
        (16, 2, 4, 2),
    ]


def test_a_run_copied_twice_counts_once(
    tmp_path: Path, clean: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against `gcloud storage cp -r` run twice (a second copy nested in the first) doubling the
    requests and the throughput ("completed 32 of 16 asked"), trusted."""
    folder = _copy(tmp_path)
    shutil.copytree(RUNS / RUN_A, folder / RUN_A)
    assert _collect(folder, tmp_path / "out.jsonl") == 0
    assert _numbers(load_results(tmp_path / "out.jsonl").records) == clean
    assert "3 share lines were exact copies of others" in capsys.readouterr().err


def test_a_repeated_line_counts_once(tmp_path: Path, clean: list[dict[str, Any]]) -> None:
    """Guards against a line appended twice (a retried upload, a hand edit) counting its samples twice."""
    folder = _copy(tmp_path)
    task = folder / "task-00001.jsonl"
    task.write_text(task.read_text() * 2)
    assert _numbers(merged_records(read_shares(folder))) == clean


def test_two_runs_in_one_folder_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against two runs of one cell pooled into one window (32 requests over 86,402 s, trusted)."""
    _copy(tmp_path, RUN_A, RUN_A)
    _copy(tmp_path, RUN_B, RUN_B)
    assert _collect(tmp_path, tmp_path / "out.jsonl") == 2
    error = capsys.readouterr().err
    assert f"holds 2 runs ({RUN_A} at {tmp_path / RUN_A / 'task-00000.jsonl'}:1, {RUN_B} at" in error
    assert "collect each run's folder on its own" in error
    assert not (tmp_path / "out.jsonl").exists()


def _sample(fields: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = fields["share"]["samples"][0][1]
    return result


def _shrink_window(fields: dict[str, Any]) -> None:
    share = fields["share"]
    share["finished_at"] = share["started_at"] + 1e-9


def _two_sample_lists(fields: dict[str, Any]) -> None:
    fields["share"]["samples"][0] = {"sent_at": 1.0}


FORGED: list[tuple[str, Edit, str]] = [
    ("negative TTFT", lambda f: _sample(f).update(ttft_s=-5.0), "ttft_s: Input should be greater than or equal to 0"),
    ("TTFT after E2EL", lambda f: _sample(f).update(ttft_s=_sample(f)["e2el_s"] + 1), "is after its e2el_s"),
    ("tokens", lambda f: _sample(f).update(output_tokens=17), "17 output tokens, above max_tokens 16"),
    ("window", _shrink_window, "is outside its share's window"),
    ("tasks_expected 0", lambda f: f.update(tasks_expected=0), "tasks_expected: Input should be greater than 0"),
    ("tasks_expected 1", lambda f: f.update(tasks_expected=1), "tasks_expected 1, but 2 users over 2 tasks take 2"),
    ("failure class", lambda f: _sample(f).update(failure={"kind": "gremlins", "detail": "", "status": None}), "kind"),
    ("NaN", lambda f: _sample(f).update(e2el_s=float("nan")), "e2el_s: Input should be a finite number"),
    ("missing field", lambda f: f["share"].pop("users"), "share.users: Field required"),
    ("wrong JSON type", lambda f: f.update(cell=[1, 2]), "cell: Input should be a valid dictionary"),
    ("wrong sample type", _two_sample_lists, "share.samples.0: Input should be a valid"),
    ("no run id", lambda f: f.pop("run_id"), "run_id: Field required"),
    ("more samples", lambda f: f["share"]["samples"].extend(f["share"]["samples"]), "runs 1 users and 2 requests"),
]


@pytest.mark.parametrize(
    ("edit", "reason"), [(edit, reason) for _, edit, reason in FORGED], ids=[name for name, *_ in FORGED]
)
def test_an_impossible_share_line_is_refused_naming_file_and_line(
    tmp_path: Path, edit: Edit, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against collect believing impossible task files (a mean TTFT of -5,000 ms, 394,758,023,529
    output tok/s, `tasks_expected: 0` hiding a missing task) or ending in a traceback on a malformed one."""
    folder = _copy(tmp_path)
    task = folder / "task-00001.jsonl"
    fields = json.loads(task.read_text())
    edit(fields)
    task.write_text(json.dumps(fields) + "\n")
    assert _collect(folder, tmp_path / "out.jsonl") == 2
    error = capsys.readouterr().err
    assert f"{task}:1: " in error
    assert reason in error
    assert not (tmp_path / "out.jsonl").exists()


def test_non_utf8_and_a_second_different_share_are_refused(tmp_path: Path) -> None:
    """Guards against a traceback on a non-UTF-8 byte, and two different lines claiming one worker's share."""
    folder = _copy(tmp_path)
    task = folder / "task-00001.jsonl"
    original = task.read_bytes()
    task.write_bytes(original.replace(b"tiny-gemma", b"tiny-\xffgemma", 1))
    with pytest.raises(CollectError, match=r"task-00001.jsonl:1: not UTF-8 text"):
        read_shares(folder)
    fields = json.loads(original)
    fields["share"]["samples"][0][1]["e2el_s"] -= 0.001
    task.write_bytes(original + json.dumps(fields).encode() + b"\n")
    with pytest.raises(CollectError, match=r"task-00001.jsonl:2 and .*task-00001.jsonl:1 are two different shares"):
        read_shares(folder)


def test_only_regular_task_files_are_read(tmp_path: Path) -> None:
    """Guards against a FIFO named task-00000.jsonl hanging collect, and a README being read as a task."""
    folder = _copy(tmp_path)
    (folder / "README.md").write_text("how this run was made\n")
    (folder / "task-notes.jsonl").write_text("not a task file\n")
    assert len(read_shares(folder).lines) == 3
    fifo = folder / "copy" / "task-00002.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(CollectError, match="is named like a task file but is not a regular file"):
        read_shares(folder)


def test_collect_checks_the_physical_ceiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against `exceeds_ceiling: false` on any rate: the ceiling never ran in collect (no accelerator
    facts were passed). With the accelerator and the parameters it is computed and judged."""
    run = read_shares(RUNS / RUN_A)
    assert all(record.ceiling_request_throughput is None for record in merged_records(run))
    facts = accelerator_facts("nvidia-l4")
    # a model of 10,000B parameters could not be served at these rates on one L4
    one, _ = merged_records(run, accelerator=facts, model_params=1e13)
    assert one.ceiling_request_throughput is not None
    assert one.exceeds_ceiling
    assert any("physical ceiling" in warning for warning in one.warnings)
    argv = ["--accelerator", "nvidia-l4", "--model-params", "10000B", "--slo", "success_rate=0"]
    assert _collect(RUNS / RUN_A, tmp_path / "out.jsonl", *argv) == 0
    assert all(record.exceeds_ceiling for record in load_results(tmp_path / "out.jsonl").records)


def test_the_barrier_counts_only_task_arrivals(tmp_path: Path) -> None:
    """Guards against a stray README (or a half-written arrival) letting task 0 start alone, or crashing it."""
    here = tmp_path / "barrier" / "16x2"
    here.mkdir(parents=True)
    (here / "README").write_text("1000.0")
    (here / "task-00001").write_text("")  # being written
    (here / "task-00007").write_text("1000.0")  # not one of the 2 tasks
    now = [1000.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] > 1002:
            (here / "task-00001").write_text("1002.0")

    barrier = FileBarrier(tmp_path, timeout_s=30, wall=lambda: now[0], sleep=sleep)
    assert asyncio.run(barrier.meet("16x2", 0, 2)) == pytest.approx(1002.5)
    assert sorted(path.name for path in here.iterdir()) == ["README", "task-00000", "task-00001", "task-00007"]
