"""The sweep against a local server: skipped cells, faults by class, platform limits, resume, interruption."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import httpx
import pytest

from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig
from tests.verify.bench.test_judgement import L4_BILLING
from verify.bench.judgement import accelerator_facts
from verify.bench.prompts import PromptBook, TokenizeCounter
from verify.bench.results import CellRecord, done_keys, load_results
from verify.bench.sweep import Endpoint, QuietObserver, SweepPlan, run_sweep
from verify.client import aiohttp_transport
from verify.streaming import Api, StreamResult

# Small and bounded: a few requests per cell, no delays unless a test injects them.
PLAN = SweepPlan(
    model="tiny-gemma",
    contexts=(32, 64),
    concurrencies=(1, 2),
    max_tokens=5,
    api=Api.CHAT,
    requests=4,
    warmups=1,
    timeouts=httpx.Timeout(0.5, connect=2.0),
)


def fake(**overrides: object) -> FakeVllm:
    fields: dict[str, object] = {"count_prompt_words": True, "chat_template_tokens": 3}
    fields.update(overrides)
    return FakeVllm(FakeVllmConfig(**fields))  # type: ignore[arg-type]


async def sweep(
    server: FakeVllm,
    path: Path,
    plan: SweepPlan = PLAN,
    *,
    endpoint: Endpoint | None = None,
    done: set[tuple[str, str, int, int, int]] | None = None,
    observer: QuietObserver | None = None,
) -> list[CellRecord]:
    async with httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client:
        return await run_sweep(
            client,
            plan,
            endpoint or Endpoint(base_url=server.url, max_model_len=server.config.max_model_len),
            results_path=path,
            done=done_keys(load_results(path).records) if done is None else done,  # type: ignore[arg-type]
            counter=TokenizeCounter(client, plan.model, plan.api),
            book=PromptBook(),
            observer=observer,
        )


def generation_requests(server: FakeVllm) -> int:
    return sum(1 for r in server.requests if r.path == CHAT_PATH)


async def test_every_cell_lands_in_the_file_with_vllm_keys(tmp_path: Path) -> None:
    """Guards against results that exist only in memory, or cells measured with the wrong workload."""
    path = tmp_path / "r.jsonl"
    async with fake() as server:
        written = await sweep(server, path)
    assert [(r.requested_context, r.max_concurrency) for r in written] == [(32, 1), (32, 2), (64, 1), (64, 2)]
    on_disk = load_results(path).records
    assert on_disk == written
    for record in on_disk:
        assert record.measured
        assert (record.completed, record.failed, record.num_prompts) == (4, 0, 4)
        assert record.actual_context == record.requested_context
        assert record.success_rate == 1.0
        assert record.request_throughput is not None
        assert record.request_throughput > 0
    # 4 cells x (1 warm-up + 4 measured); /tokenize did the calibration, not generation requests.
    assert generation_requests(server) == 4 * 5


async def test_cells_longer_than_max_model_len_are_skipped_not_failed(tmp_path: Path) -> None:
    """Guards against reporting 400s for cells the server was never configured to accept."""
    path = tmp_path / "r.jsonl"
    plan = SweepPlan(model="tiny-gemma", contexts=(32, 100), concurrencies=(1,), max_tokens=5, requests=2, warmups=0)
    async with fake(max_model_len=100) as server:
        written = await sweep(server, path, plan)
    skipped = [r for r in written if not r.measured]
    assert [(r.requested_context, r.skip_reason) for r in skipped] == [
        (100, "prompt 100 + max tokens 5 exceeds the server's max_model_len 100")
    ]
    assert generation_requests(server) == 2  # only the 32-token cell sent anything
    assert all(not r.failed for r in written)


async def test_fault_bursts_are_counted_by_class_and_never_retried(tmp_path: Path) -> None:
    """Guards against 429/503 bursts, stalls and cut streams disappearing into retries or one 'error'."""
    plan = SweepPlan(
        model="tiny-gemma",
        contexts=(16,),
        concurrencies=(1,),
        max_tokens=3,
        requests=6,
        warmups=0,
        timeouts=httpx.Timeout(0.3, connect=2.0),
    )
    path = tmp_path / "r.jsonl"
    async with fake(pieces=("a", "b", "c"), status_sequences={CHAT_PATH: [429, 429, 503]}) as server:
        (record,) = await sweep(server, path, plan)
        assert generation_requests(server) == 6  # one attempt per measured request
        server.config.cut_stream_after_chunks = 1
        cut = await sweep(server, tmp_path / "cut.jsonl", plan)
        server.config.cut_stream_after_chunks = None
        server.config.itl_s = [0.0, 1.0]
        # Every outcome here is a read timeout, an early one included: a shorter one only waits less.
        quick = dataclasses.replace(plan, timeouts=httpx.Timeout(0.1, connect=2.0))
        stalled = await sweep(server, tmp_path / "stall.jsonl", quick)
    assert record.errors == {"http_429": 2, "http_503": 1}
    assert record.error_statuses == {"429": 2, "503": 1}
    assert (record.completed, record.failed, record.success_rate) == (3, 3, 0.5)
    assert record.error_examples[0].startswith("http_429 429: ")
    assert cut[0].errors == {"stream_interrupted": 6}
    assert stalled[0].errors == {"read_timeout": 6}
    assert stalled[0].success_rate == 0.0


async def test_failures_within_cloud_runs_admission_are_not_explained_away(tmp_path: Path) -> None:
    """Guards against labelling every 429 a platform limit: below concurrency x max instances it is not."""
    plan = SweepPlan(model="tiny-gemma", contexts=(16,), concurrencies=(2,), max_tokens=3, requests=4, warmups=0)
    async with fake(status_sequences={CHAT_PATH: [429, 429]}) as server:
        (record,) = await sweep(server, tmp_path / "r.jsonl", plan, endpoint=Endpoint(server.url, admission_limit=2))
    assert record.failed == 2
    assert not record.platform_limited
    assert record.platform_limited_failures == 0


async def test_platform_limit_counts_the_429s_of_an_over_limit_cell(tmp_path: Path) -> None:
    """Guards against an over-limit cell's 429s being reported as model failures."""
    plan = SweepPlan(model="tiny-gemma", contexts=(16,), concurrencies=(4,), max_tokens=3, requests=4, warmups=0)
    async with fake(status_sequences={CHAT_PATH: [429, 429]}) as server:
        (record,) = await sweep(server, tmp_path / "r.jsonl", plan, endpoint=Endpoint(server.url, admission_limit=2))
    assert record.platform_limited
    assert record.platform_limited_failures == 2
    assert any("exceeds what Cloud Run admits (2" in warning for warning in record.warnings)


async def test_resume_skips_done_cells_without_sending_a_request(tmp_path: Path) -> None:
    """Guards against --resume re-measuring (and paying for) cells the file already holds."""
    path = tmp_path / "r.jsonl"
    async with fake() as server:
        await sweep(server, path)
        sent = generation_requests(server)
        again = await sweep(server, path)
    assert again == []
    assert generation_requests(server) == sent
    assert len(load_results(path).records) == 4


async def test_an_interrupted_sweep_keeps_finished_cells_and_resume_finishes_it(tmp_path: Path) -> None:
    """Guards against Ctrl-C losing the cells that finished, or resume measuring them twice."""
    path = tmp_path / "r.jsonl"
    tasks: list[asyncio.Task[list[CellRecord]]] = []

    class StopAfterTwo(QuietObserver):
        finished = 0

        def cell_finished(self, record: CellRecord) -> None:
            self.finished += 1
            if self.finished == 2:
                # Ctrl-C as the second cell is written: the sweep stops at its next await, whatever the timing.
                tasks[0].cancel()

    async with fake() as server:
        tasks.append(asyncio.create_task(sweep(server, path, observer=StopAfterTwo())))
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]
        kept = load_results(path).records
        assert len(kept) == 2
        finished = await sweep(server, path)
    assert len(finished) == 2
    assert {r.key for r in finished}.isdisjoint({r.key for r in kept})
    final = load_results(path)
    assert final.unreadable_lines == []
    assert sorted((r.requested_context, r.max_concurrency) for r in final.records) == [
        (32, 1),
        (32, 2),
        (64, 1),
        (64, 2),
    ]


async def test_a_cell_whose_client_stalled_says_so(tmp_path: Path) -> None:
    """Guards against a starved load generator (late to notice answers) passing off its own delay as the
    server's latency: the cell records the stall and carries a warning."""
    path = tmp_path / "r.jsonl"
    # Two requests: the stall after the first is seen by the probe while the second runs (after the last one the
    # cell may end before the probe wakes).
    plan = SweepPlan(model="tiny-gemma", contexts=(32,), concurrencies=(1,), max_tokens=5, requests=2, warmups=0)

    class StarvedClient(QuietObserver):
        def request_finished(self, result: StreamResult) -> None:
            time.sleep(0.15)  # the event loop cannot run, as when the machine has no CPU to spare

    async with fake() as server:
        (record,) = await sweep(server, path, plan, observer=StarvedClient())
    assert record.client_max_stall_ms is not None
    assert record.client_max_stall_ms >= 140.0
    assert any("stalled for up to" in warning for warning in record.warnings)


async def test_a_cell_records_its_stalls_even_when_there_were_none_to_speak_of(tmp_path: Path) -> None:
    """Guards against the stall fields going missing, which would read as 'not measured'."""
    async with fake() as server:
        written = await sweep(server, tmp_path / "r.jsonl")
    assert all(r.client_max_stall_ms is not None and r.client_stalled_ms is not None for r in written)


def test_default_requests_and_warmups() -> None:
    """Guards against tiny cells whose percentiles mean nothing: at least 32 requests, 4 per user."""
    plan = SweepPlan(model="m", contexts=(1,), concurrencies=(1,), max_tokens=1)
    assert [plan.requests_for(c) for c in (1, 8, 32, 2048)] == [32, 32, 128, 8192]
    assert [plan.warmups_for(c) for c in (1, 8, 32)] == [1, 8, 8]


def test_forced_output_length_is_requested() -> None:
    """Guards against outputs that stop at EOS, making TPOT and throughput incomparable between cells."""
    request = PLAN.request("p", 1)
    assert request.ignore_eos
    assert request.min_tokens == request.max_tokens == 5
    assert request.expected_prompt_tokens == 1
    assert request.answer_names == frozenset({PLAN.model})


async def test_each_cell_records_its_price_and_what_it_is_the_price_of(tmp_path: Path) -> None:
    """A cost per 1M tokens nobody can trace back to a shape and a rate cannot be checked: the record keeps both."""
    facts = accelerator_facts("nvidia-l4", billing=L4_BILLING)
    plan = SweepPlan(model="tiny-gemma", contexts=(16,), concurrencies=(1,), max_tokens=3, requests=2, warmups=0)
    async with fake() as server:
        endpoint = Endpoint(server.url, max_model_len=server.config.max_model_len, accelerator=facts)
        (record,) = await sweep(server, tmp_path / "r.jsonl", plan, endpoint=endpoint)
    assert record.price_per_hour_usd == facts.price_per_hour_usd
    assert record.price_basis == facts.price_basis
    assert record.price_basis is not None
    assert "8 vCPU, 32 GiB" in record.price_basis
    assert record.cost_per_1m_output_tokens_usd is not None
