"""Traffic as it really arrives: users who think, sessions whose history the cache reuses, a mixture of request
kinds behind a shared system prompt, adapters, in one workload file the CLI and the MCP tool read alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from tests.conftest import ROOT
from tests.gemma_mcp.conftest import connect, text_of
from verify import UsageError
from verify.advise.options import AdviseOptions, Slo
from verify.advise.run import run_advise
from verify.advise.workload import Workload, load_workload, workload_options
from verify.cli import main as verify_main

TEAM = ROOT / "examples" / "workloads" / "coding-team.yaml"


def test_think_time_means_fewer_requests_in_flight() -> None:
    """ "10 developers" became 10 requests always in flight and four RTX PRO 6000s: with 30 s of think time the
    same ten users send a fraction of the requests, and their cheapest deployment costs less."""
    base = AdviseOptions(
        prompt_tokens=8192, output_tokens=512, users=10, slo=Slo(p95_ttft_ms=2000), platforms=("cloud-run",)
    )
    busy = run_advise(base.model_copy(update={"one_ranking": True}))
    thinking = run_advise(base.model_copy(update={"one_ranking": True, "think_time_s": 30.0}))
    assert busy.rows
    assert thinking.rows
    assert thinking.rows[0].requests_per_s < busy.rows[0].requests_per_s
    assert thinking.rows[0].usd_per_month <= busy.rows[0].usd_per_month
    assert "30 s think time" in thinking.load


def test_sessions_and_a_system_prompt_become_reuse_and_the_longest_turn() -> None:
    """A session resends its history every turn: the prompt grows by (N-1)/2 turns on average, all of it but the
    new prompt reused, one history per user in the cache, and the KV cache must hold the last turn."""
    workload = load_workload(TEAM)
    options = workload_options(workload)
    mean_turn = (1500 + 300) * 0.8 + (6000 + 800) * 0.2
    assert options.reused_tokens == 2000 + round(5 / 2 * mean_turn)
    assert options.distinct_prefixes == 10
    longest_prompt, _ = options.longest
    assert longest_prompt == 2000 + round(5 * mean_turn) + 6000
    assert options.think_time_s == 30
    assert options.adapters is not None
    assert options.adapters.count == 3


def test_a_workload_file_gives_the_same_answer_through_the_cli_and_the_mcp_tool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A team keeps its workload in the repo: `advise --workload FILE` and the MCP tool's workload_file answer the
    same rows, think time, system prompt and adapters included."""
    code = verify_main(["advise", "--workload", str(TEAM), "--json", "--top", "3"])
    assert code in {0, 1}
    cli = json.loads(capsys.readouterr().out)

    async def tool() -> dict[str, Any]:
        async with connect() as client:
            result = await client.call_tool("advise", {"workload_file": str(TEAM), "top": 3})
        assert not result.is_error, text_of(result)
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    import asyncio

    mcp = asyncio.run(tool())
    key = [(r["model"], r["variant"], r["shape"], r["replicas"]) for r in cli["rows"]]
    assert key == [(r["model"], r["variant"], r["shape"], r["replicas"]) for r in mcp["rows"]]
    assert "LoRA adapter" in cli["workload"]
    assert "think time" in cli["load"]


def test_a_bad_workload_file_is_a_usage_error_naming_file_and_key(tmp_path: Path) -> None:
    """A typo in a workload file must not fall back to a default: the error names the file and the key."""
    path = tmp_path / "w.yaml"
    path.write_text("requests: [{prompt_tokens: 100, output_tokens: 10}]\nusers: 3\nthink_tme_s: 5\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"w\.yaml.*think_tme_s"):
        load_workload(path)
    with pytest.raises(pydantic.ValidationError, match="p95_ttft"):
        workload_options(
            Workload.model_validate(
                {"requests": [{"prompt_tokens": 9, "output_tokens": 9}], "users": 1, "slo": {"ttft": 1}}
            )
        )


def test_the_workload_file_and_workload_flags_are_not_mixed(capsys: pytest.CaptureFixture[str]) -> None:
    """`--workload FILE --users 50` would be two workloads: exit 2 naming the flag."""
    assert verify_main(["advise", "--workload", str(TEAM), "--users", "50"]) == 2
    assert "--users" in capsys.readouterr().err
