"""The bench tool on the stack's Cloud Run load-generator job: only with --allow-changes and confirm=<stack>.

The job itself is not run here (it needs Google Cloud): the runner stands in for `python -m verify bench
--on-cloud-run`, whose own tests (tests/verify/bench/test_cloud.py) cover starting, copying and merging.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from gemma_mcp.context import ServerContext
from gemma_mcp.runner import Completed
from tests.gemma_mcp.conftest import connect, make_context, remove_files, text_of

MERGED = Path(__file__).resolve().parents[1] / "verify" / "bench" / "data" / "matrix" / "l4.jsonl"


@dataclasses.dataclass
class JobRunner:
    """Records the verify command and writes what a merged job run leaves: the results file."""

    calls: list[list[str]] = dataclasses.field(default_factory=list)

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        self.calls.append([module, *args])
        output = Path(args[list(args).index("--output") + 1])
        await asyncio.to_thread(output.write_bytes, MERGED.read_bytes())
        return Completed(0, "", "merged 8 cells")


def _context(*, allow_changes: bool, runner: JobRunner) -> ServerContext:
    return dataclasses.replace(make_context(allow_changes=allow_changes), run_module=runner)


SWEEP = {"stack": "l4", "on_cloud_run": True, "concurrency": [256, 2048], "context": [1024], "max_tokens": 256}


async def test_read_only_servers_refuse_the_load_generator_job() -> None:
    """Read-only stays the default: without --allow-changes nothing is started, whatever the call says."""
    runner = JobRunner()
    async with connect(_context(allow_changes=False, runner=runner)) as client:
        result = await client.call_tool("bench", {**SWEEP, "confirm": "l4"})
    assert result.is_error
    assert "--allow-changes" in text_of(result)
    assert runner.calls == []


async def test_the_job_needs_the_stack_confirmed_by_name() -> None:
    runner = JobRunner()
    async with connect(_context(allow_changes=True, runner=runner)) as client:
        missing = await client.call_tool("bench", SWEEP)
        wrong = await client.call_tool("bench", {**SWEEP, "confirm": "rtx6000"})
        by_url = await client.call_tool("bench", {**SWEEP, "stack": None, "url": "http://127.0.0.1:9", "confirm": "l4"})
    assert all(result.is_error for result in (missing, wrong, by_url))
    assert "confirm='l4'" in text_of(missing)
    assert "needs stack" in text_of(by_url)
    assert runner.calls == []


async def test_a_confirmed_sweep_runs_on_the_job_up_to_2048_users_and_returns_the_merged_cells() -> None:
    runner = JobRunner()
    async with connect(_context(allow_changes=True, runner=runner)) as client:
        result = await client.call_tool("bench", {**SWEEP, "confirm": "l4"})
    assert not result.is_error, result.content
    found = result.structured_content
    try:
        [call] = runner.calls
        assert call[:2] == ["verify", "bench"]
        assert "--on-cloud-run" in call
        assert call[call.index("--stack") + 1] == "l4"
        assert call[call.index("--concurrency") + 1] == "256,2048"
        assert found["caps"]["max_users"] == 2048
        merged = [json.loads(line) for line in MERGED.read_text().splitlines() if line.strip()]
        assert [cell["max_concurrency"] for cell in found["report"]] == [cell["max_concurrency"] for cell in merged]
    finally:
        remove_files([found["results_file"], *found["report_files"]])


async def test_without_the_job_the_local_cap_stays_128_users() -> None:
    runner = JobRunner()
    async with connect(_context(allow_changes=True, runner=runner)) as client:
        result = await client.call_tool("bench", {**SWEEP, "on_cloud_run": False})
    assert result.is_error
    assert "outside 1..128" in text_of(result)
