"""Workload shapes: shared prefixes the cache can reuse, chats that carry their history."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx

from tests.fake_vllm import CHAT_PATH
from tests.verify.bench.test_sweep import PLAN, fake, sweep
from verify.bench.results import load_results
from verify.bench.scenarios import (
    Scenario,
    ScenarioOptions,
    bucket_of,
    chats,
    drawn_lengths,
    measure_chats,
    prompt_buckets,
    with_prefixes,
)
from verify.client import aiohttp_transport
from verify.streaming import StreamRequest


def test_shared_prefixes_come_first_and_cycle() -> None:
    """Guards against a "shared prefix" placed after the unique part, where no cache can reuse it."""
    prompts = with_prefixes(["a", "b", "c"], ["P0", "P1"])
    assert prompts == ["P0\n\na", "P1\n\nb", "P0\n\nc"]


async def test_shared_prefix_cells_send_the_prefixes_and_record_the_hit_rate(tmp_path: Path) -> None:
    """Guards against a shared-prefix cell whose prompts do not share anything, or that hides the cache."""
    scenario = ScenarioOptions(Scenario.SHARED_PREFIX, shared_prefixes=2, prefix_tokens=16)
    plan = dataclasses.replace(PLAN, contexts=(48,), concurrencies=(2,), scenario=scenario)
    async with fake() as server:
        await sweep(server, tmp_path / "shared.jsonl", plan)
    record = load_results(tmp_path / "shared.jsonl").records[0]
    assert record.scenario == "shared-prefix (2 prefixes x 16 tokens)"
    contents = [
        seen.body["messages"][-1]["content"]  # type: ignore[index]
        for seen in server.requests
        if seen.path == CHAT_PATH
    ]
    heads = {content.split("\n\n")[0] for content in contents[-4:]}
    assert len(heads) == 2  # the measured requests used both prefixes, and only those
    assert "prefix_cache_hit_rate" in record.model_fields_set


async def test_each_turn_carries_the_conversation_so_far() -> None:
    """Guards against a "multi-turn" load whose turns are unrelated requests (no history, no cache reuse)."""
    turns = [StreamRequest(model="tiny-gemma", prompt=f"q{i}", max_tokens=5) for i in range(6)]
    async with (
        fake() as server,
        httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client,
    ):
        share = await measure_chats(client, chats(turns, 3), users=2)
    assert len(share.samples) == 6
    bodies = [seen.body for seen in server.requests if seen.path == CHAT_PATH]
    by_question = {body["messages"][-1]["content"]: body["messages"] for body in bodies}  # type: ignore[index]
    third = by_question["q2"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in third if m["role"] == "user"] == ["q0", "q1", "q2"]
    assert third[1]["content"] == " Hello from a fake server"  # the server's real answer, not a made-up one


def test_drawn_lengths_stay_within_their_ceiling_and_mix_short_and_long() -> None:
    """Guards against a "length distribution" that is one length, or that exceeds --context/--max-tokens."""
    lengths = drawn_lengths(1024, 500)
    assert min(lengths) >= 256
    assert max(lengths) <= 1024
    assert len(set(lengths)) > 50
    assert drawn_lengths(1024, 500) == lengths  # seeded
    assert prompt_buckets(1024) == [256, 512, 768, 1024]
    assert bucket_of(700, prompt_buckets(1024)) == 512


async def test_lengths_cells_send_mixed_prompts_and_outputs(tmp_path: Path) -> None:
    """Guards against the lengths scenario sending equal requests (the point is the mix) or asking for more
    output than --max-tokens."""
    plan = dataclasses.replace(
        PLAN, contexts=(64,), concurrencies=(2,), requests=12, max_tokens=5, scenario=ScenarioOptions(Scenario.LENGTHS)
    )
    async with fake() as server:
        await sweep(server, tmp_path / "lengths.jsonl", plan)
    record = load_results(tmp_path / "lengths.jsonl").records[0]
    assert record.scenario is not None
    assert record.scenario.startswith("lengths")
    bodies = [seen.body for seen in server.requests if seen.path == CHAT_PATH]
    assert len({body["max_tokens"] for body in bodies}) > 1  # type: ignore[index]
    assert max(body["max_tokens"] for body in bodies) <= 5  # type: ignore[index]
    assert len({len(body["messages"][-1]["content"]) for body in bodies}) > 1  # type: ignore[index]
