"""Sweeps against a real vLLM server (the ``live_server`` fixture: ``make test-live``, or VERIFY_LIVE_URL).

Run against the CPU build of vLLM 0.32 with tiny-gemma already serving:
``VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma pytest tests/verify/bench -m live -n 0``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.server import RunningServer
from verify.bench.results import load_results
from verify.cli import main

pytestmark = pytest.mark.live


def target_args(server: RunningServer) -> list[str]:
    return ["--url", server.base_url, *(["--model", server.model] if server.model else [])]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_small_sweep_against_a_real_server(live_server: RunningServer, tmp_path: Path, api: str) -> None:
    """Guards against anything the fakes cannot show: vLLM's real stream, tokenizer and usage counts."""
    output = tmp_path / "live.jsonl"
    argv = ["bench", *target_args(live_server), "--api", api, "--concurrency", "1,2", "--context", "64"]
    argv += ["--max-tokens", "8", "--requests", "4", "--warmup", "1", "--no-progress", "--output", str(output)]
    assert main(argv) == 0
    records = load_results(output).records
    assert len(records) == 2
    for record in records:
        assert record.success_rate == 1.0, record.error_examples
        # The prompt is exactly as long as asked, as the server itself counted it.
        assert record.actual_context == 64
        assert record.prompt_length_source == "tokenize"
        # ignore_eos + min_tokens: every request produced exactly max_tokens, counted from usage.
        assert record.total_output_tokens == 8 * record.completed
        assert record.mean_ttft_ms is not None
        assert record.mean_ttft_ms > 0
        assert record.vllm_version


def test_shared_prefix_cells_hit_the_real_prefix_cache(live_server: RunningServer, tmp_path: Path) -> None:
    """Guards against a shared-prefix workload the server does not see as shared: vLLM's own counters must
    show prefix-cache hits (the random workload's are ~0: its prompts are unique from the first token)."""
    output = tmp_path / "shared.jsonl"
    argv = ["bench", *target_args(live_server), "--scenario", "shared-prefix", "--shared-prefixes", "2"]
    argv += ["--prefix-tokens", "256", "--context", "320", "--concurrency", "2", "--max-tokens", "4"]
    argv += ["--requests", "8", "--warmup", "2", "--no-progress", "--output", str(output)]
    assert main(argv) == 0
    (record,) = load_results(output).records
    assert record.completed == 8
    assert record.scenario == "shared-prefix (2 prefixes x 256 tokens)"
    assert record.prefix_cache_hit_rate is not None
    assert record.prefix_cache_hit_rate > 0.3


def test_multi_turn_chats_carry_their_history_to_the_real_server(live_server: RunningServer, tmp_path: Path) -> None:
    """Guards against multi-turn turns the real chat template refuses, or that do not grow the prompt."""
    output = tmp_path / "chats.jsonl"
    argv = ["bench", *target_args(live_server), "--scenario", "multi-turn", "--turns", "2", "--context", "64"]
    argv += ["--concurrency", "2", "--max-tokens", "4", "--requests", "4", "--warmup", "1", "--no-progress"]
    assert main([*argv, "--output", str(output)]) == 0
    (record,) = load_results(output).records
    assert record.completed == 4
    assert record.success_rate == 1.0
    # Half the requests are second turns: their prompt holds the first question and answer too.
    assert record.actual_context is not None
    assert record.actual_context > 64 + 20


def test_max_rate_search_probes_the_real_server(live_server: RunningServer, tmp_path: Path) -> None:
    """Guards against a search that cannot run against real vLLM: three open-loop probes, each a line, and an
    answer with its bracket (a lenient SLO: the tiny model on two shared cores meets it at every rate)."""
    output = tmp_path / "search.jsonl"
    argv = ["bench", *target_args(live_server), "--find-max-rate", "--slo", "median_ttft_ms=60000", "--context", "64"]
    argv += ["--max-tokens", "4", "--requests", "8", "--warmup", "1", "--rate-start", "2", "--max-probes", "3"]
    argv += ["--allow-untrusted", "--no-progress", "--output", str(output)]
    assert main(argv) == 0
    records = load_results(output).records
    assert [record.request_rate for record in records] == [2.0, 4.0, 8.0]
    assert all(record.achieved_request_rate for record in records)
    assert all(record.goodput_slo == "ttft <= 60000 ms" for record in records)


def test_needle_cells_ask_the_real_server_and_record_recall(live_server: RunningServer, tmp_path: Path) -> None:
    """Guards against needle prompts the real chat template or tokenizer refuses, or a prompt length that misses
    --context once the passcode and question are added. (The tiny random model finds no passcode: its recall is
    whatever it is, between 0 and 1; what is checked is that it is measured.)"""
    output = tmp_path / "needle.jsonl"
    argv = ["bench", *target_args(live_server), "--scenario", "needle", "--context", "256", "--concurrency", "2"]
    argv += ["--max-tokens", "8", "--requests", "4", "--warmup", "1", "--no-progress", "--allow-untrusted"]
    assert main([*argv, "--output", str(output)]) == 0
    (record,) = load_results(output).records
    assert record.completed == 4
    assert record.needle_recall is not None
    assert 0.0 <= record.needle_recall <= 1.0
    assert record.actual_context is not None
    assert abs(record.actual_context - 256) <= 4


def test_bench_replays_an_advise_workload_file(live_server: RunningServer, tmp_path: Path) -> None:
    """`bench --workload FILE` replays the description advise ranked: a cell per request kind at its prompt (system
    prompt and history included), the mean output, its users, against the real server."""
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "requests:\n  - {prompt_tokens: 40, output_tokens: 6, share: 0.5}\n  - {prompt_tokens: 80, output_tokens: 10, "
        "share: 0.5}\nsystem_prompt_tokens: 24\nusers: 2\nthink_time_s: 1\n",
        encoding="utf-8",
    )
    output = tmp_path / "replay.jsonl"
    argv = ["bench", *target_args(live_server), "--workload", str(workload), "--requests", "4", "--warmup", "1"]
    argv += ["--no-progress", "--output", str(output)]
    assert main(argv) == 0
    records = load_results(output).records
    assert sorted(record.actual_context or 0 for record in records) == [64, 104]
    for record in records:
        assert record.success_rate == 1.0, record.error_examples
        assert record.max_concurrency == 2
        assert record.total_output_tokens == 8 * record.completed
