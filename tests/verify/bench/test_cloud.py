"""The load-generator job's side, offline: users split over tasks, tasks meeting at the barrier, the
merge of their files, and `--on-cloud-run`'s commands."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from remote.tls import default_tls
from tests.fake_pulumi import FakeStackOutputs
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from verify.bench.cloud import (
    FileBarrier,
    TaskSlot,
    cell_header,
    merged_records,
    run_task,
    share_line,
    task_file,
)
from verify.bench.prompts import PromptLengthSource, PromptShape, TokenizeCounter
from verify.bench.results import load_results
from verify.bench.samples import PhaseShare, Sample
from verify.bench.share_lines import CollectError, read_shares
from verify.bench.stall import StallSummary
from verify.bench.sweep import Endpoint, SweepPlan
from verify.cli import main, two_word_alias
from verify.streaming import Api, StreamResult

PLAN = SweepPlan(
    model="tiny-gemma",
    contexts=(32,),
    concurrencies=(1, 4),
    max_tokens=5,
    api=Api.CHAT,
    requests=8,
    warmups=2,
    timeouts=httpx.Timeout(5.0),
)


@pytest.mark.parametrize(
    ("users", "tasks", "expected"),
    [(2048, 16, [128] * 16), (3, 8, [1, 1, 1, 0, 0, 0, 0, 0]), (10, 4, [3, 3, 2, 2]), (1, 1, [1])],
)
def test_users_are_split_over_tasks(users: int, tasks: int, expected: list[int]) -> None:
    """Guards against tasks that together run more or fewer users than the cell asks for."""
    slots = [TaskSlot(index, tasks) for index in range(tasks)]
    assert [slot.users(users) for slot in slots] == expected
    assert sum(slot.share_of(8 * users, users) for slot in slots) == 8 * users


def test_task_slot_comes_from_cloud_runs_environment() -> None:
    """Guards against every task believing it is task 0 (all measuring the same share)."""
    assert TaskSlot.from_env({"CLOUD_RUN_TASK_INDEX": "3", "CLOUD_RUN_TASK_COUNT": "8"}) == TaskSlot(3, 8)
    assert TaskSlot.from_env({}) == TaskSlot(0, 1)
    with pytest.raises(ValueError, match="not a task"):
        TaskSlot.from_env({"CLOUD_RUN_TASK_INDEX": "8", "CLOUD_RUN_TASK_COUNT": "8"})


async def test_two_tasks_meet_measure_and_merge_into_one_cell_line(tmp_path: Path) -> None:
    """Guards against a cell whose tasks measured one after another (half the load), lost samples in the
    merge, or a merged line that differs in shape from a local sweep's."""
    results = tmp_path / "run-1"
    config = FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3, ttft_s=0.005)
    async with FakeVllm(config) as server:
        endpoint = Endpoint(base_url=server.url, platform="cloud-run", max_model_len=2048, transport="aiohttp")

        async def task(index: int) -> int:
            slot = TaskSlot(index, 2)
            async with httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client:
                return await run_task(
                    client,
                    PLAN,
                    endpoint,
                    slot=slot,
                    run_id="run-1",
                    output=task_file(tmp_path, "run-1", index),
                    counter=TokenizeCounter(client, PLAN.model, PLAN.api),
                    # Tasks of one process meet at once: a margin and poll for Cloud Run's would only add waiting.
                    barrier=FileBarrier(results, timeout_s=30, margin_s=0.05, poll_s=0.01),
                )

        cells = await asyncio.gather(task(0), task(1))
    assert list(cells) == [2, 1]  # the 1-user cell needs one task only
    run = read_shares(tmp_path)
    records = merged_records(run)
    assert [(r.requested_context, r.max_concurrency) for r in records] == [(32, 1), (32, 4)]
    one, four = records
    assert (one.completed, one.client_workers) == (8, 1)
    assert (four.completed, four.client_workers, four.failed) == (8, 2, 0)
    assert four.actual_context == 32
    assert four.platform == "cloud-run"
    # Both tasks' measured phases started together (the barrier), so the window is one phase long.
    starts = [item.line.share.started_at for item in run.lines if item.line.cell.concurrency == 4]
    assert abs(starts[0] - starts[1]) < 0.2
    assert all(not w.startswith("only") for w in four.warnings)


def _synthetic_line(task: int, tasks: int, users: int) -> str:
    result = StreamResult(0.1, (0.01,) * 4, 0.14, 5, 32, "length", "", 5)
    share = PhaseShare(100.0, 101.0, tuple(Sample(100.0 + i / 10, result) for i in range(4)), StallSummary(1, 0, 9), 2)
    shape = PromptShape(32, 10, 0, 32, PromptLengthSource.TOKENIZE)
    slot = TaskSlot(task, tasks)
    header = cell_header(PLAN, Endpoint(base_url="https://svc"), shape, 32, users, slot=slot, run_id="run-1")
    return share_line(header, share, worker=0, to_wall=1_700_000_000.0)


def test_a_missing_task_makes_the_cell_untrusted(tmp_path: Path) -> None:
    """Guards against a cell reported at 4 users when one of the two tasks that should load it failed."""
    (tmp_path / "task-00000.jsonl").write_text(_synthetic_line(0, 2, 4) + "\n")
    (record,) = merged_records(read_shares(tmp_path))
    assert record.completed == 4
    assert not record.trusted
    assert record.untrusted_reason is not None
    assert "only 1 of 2 load-generator tasks" in record.untrusted_reason


def test_collect_refuses_an_empty_or_foreign_folder(tmp_path: Path) -> None:
    """Guards against an empty report when the run's folder was not copied (or a task died mid-line)."""
    with pytest.raises(CollectError, match="no task"):
        read_shares(tmp_path)
    (tmp_path / "task-00000.jsonl").write_text('{"record": "share", "cut')
    with pytest.raises(CollectError, match="not JSON"):
        read_shares(tmp_path)


async def test_the_barrier_gives_up_naming_who_is_missing(tmp_path: Path) -> None:
    """Guards against a task waiting forever for a task that never started."""
    now = [1000.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    barrier = FileBarrier(tmp_path, timeout_s=5, wall=lambda: now[0], sleep=sleep)
    with pytest.raises(TimeoutError, match="1 of 2 tasks arrived within 5 s"):
        await barrier.meet("32x4", 0, 2)


async def test_the_barrier_starts_everyone_after_the_last_arrival(tmp_path: Path) -> None:
    """Guards against the first task starting its load alone."""
    (tmp_path / "barrier" / "c").mkdir(parents=True)
    (tmp_path / "barrier" / "c" / "task-00001").write_text("1005.0")
    barrier = FileBarrier(tmp_path, wall=lambda: 1000.0)
    assert await barrier.meet("c", 0, 2) == pytest.approx(1005.5)


def test_bench_collect_and_task_are_two_words() -> None:
    """Guards against the documented `python -m verify bench collect DIR` not parsing."""
    assert two_word_alias(["bench", "collect", "d"]) == ["bench-collect", "d"]
    assert two_word_alias(["bench", "--url", "u"]) == ["bench", "--url", "u"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--timeout", "nan"), ("--barrier-timeout", "0"), ("--deadline", "-1"), ("--workers", "0")],
)
def test_bench_task_refuses_a_number_no_run_could_use(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job's task takes the same finite, positive numbers as `verify bench`: a `nan` wait would never
    end, and the message names the flag."""
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "task", "--run-id", "r1", flag, value])
    assert exit_info.value.code == 2
    assert flag in capsys.readouterr().err


def test_on_cloud_run_starts_the_job_with_the_sweep_and_merges_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against an execution started with the wrong job, region or sweep (gcloud splits lists on
    commas), and results left in the bucket instead of merged into the usual files."""
    outputs = {
        "endpoint": "https://svc",
        "servedModelName": "tiny-gemma",
        "authKind": "google-id-token",
        "benchJob": {
            "name": "gemma-l4-bench",
            "region": "us-east4",
            "project": "p",
            "tasks": 2,
            "resultsBucket": "b",
            "resultsPrefix": "bench-runs",
        },
    }
    commands: list[list[str]] = []

    def run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        commands.append(list(command))
        if command[:3] == ["gcloud", "storage", "cp"]:
            folder = Path(command[-1]) / "run"
            folder.mkdir(parents=True)
            for task in (0, 1):
                (folder / f"task-{task:05d}.jsonl").write_text(_synthetic_line(task, 2, 4) + "\n")
        return subprocess.CompletedProcess(list(command), 0, "", "")

    monkeypatch.setattr("verify.bench.cloud_command._run", run)
    monkeypatch.setattr("verify.bench.cloud_command._gateway", lambda: FakeStackOutputs({"l4": outputs}))
    output = tmp_path / "cloud.jsonl"
    code = main(
        [
            *("bench", "--stack", "l4", "--on-cloud-run", "--concurrency", "1,4", "--context", "32"),
            *("--max-tokens", "5", "--output", str(output), "--no-progress"),
        ]
    )
    assert code == 0
    execute = commands[0]
    assert execute[:9] == [
        "gcloud",
        "run",
        "jobs",
        "execute",
        "gemma-l4-bench",
        "--region",
        "us-east4",
        "--project",
        "p",
    ]
    args = execute[-1]
    assert args.startswith("--args=^|^--run-id|run-")
    assert "|--concurrency|1,4|--context|32|--max-tokens|5|" in args
    assert commands[1][:5] == ["gcloud", "storage", "cp", "-r", f"gs://b/bench-runs/{args.split('|')[2]}"]
    (record,) = load_results(output).records
    assert (record.max_concurrency, record.completed, record.client_workers) == (4, 8, 2)
    assert (tmp_path / "cloud.md").exists()


def test_on_cloud_run_without_a_bench_block_says_how_to_add_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against a confusing failure when the stack has no load-generator job."""

    monkeypatch.setattr(
        "verify.bench.cloud_command._gateway", lambda: FakeStackOutputs({"l4": {"endpoint": "https://svc"}})
    )
    code = main(["bench", "--stack", "l4", "--on-cloud-run", "--output", str(tmp_path / "x.jsonl")])
    assert code == 2
    assert "gemma-serving:bench block" in capsys.readouterr().err
