"""The compare tool over N results files: the agent's closing answer, cost table and verdict per workload."""

from __future__ import annotations

from tests.gemma_mcp.conftest import connect, text_of

DATA = "tests/verify/bench/data/matrix"


async def test_compare_takes_n_files_and_names_the_cheapest_run_per_workload() -> None:
    async with connect() as client:
        result = await client.call_tool(
            "compare",
            {
                "a": f"{DATA}/l4.jsonl",
                "b": f"{DATA}/rtx6000.jsonl",
                "more": [f"{DATA}/tpu-v6e.jsonl"],
                "slo": ["p99_ttft_ms=1000"],
                "active_hours": 6,
            },
        )
    assert not result.is_error, result.content
    found = result.structured_content
    assert [path.rsplit("/", 1)[-1] for path in found["runs"]] == ["l4.jsonl", "rtx6000.jsonl", "tpu-v6e.jsonl"]
    assert [(w["workload"]["context"], w["cheapest"]) for w in found["cells"]] == [(1024, "tpu-v6e"), (4096, "rtx6000")]
    l4 = next(run for run in found["cells"][0]["runs"] if run["run"] == "l4")
    assert l4["scaled_to_zero_monthly_usd"] == l4["always_on_monthly_usd"] / 4
    assert l4["break_even_active_hours"] > 0
    rtx = next(run for run in found["cells"][0]["runs"] if run["run"] == "rtx6000")
    assert any("untrusted" in line for line in rtx["left_out"])
    assert "**Cheapest meeting the SLO:**" in text_of(result)


async def test_compare_refuses_a_bad_slo_or_active_hours() -> None:
    async with connect() as client:
        bad_slo = await client.call_tool(
            "compare", {"a": f"{DATA}/l4.jsonl", "b": f"{DATA}/rtx6000.jsonl", "matrix": True, "slo": ["fast=1"]}
        )
        bad_hours = await client.call_tool(
            "compare", {"a": f"{DATA}/l4.jsonl", "b": f"{DATA}/rtx6000.jsonl", "matrix": True, "active_hours": 25}
        )
    assert bad_slo.is_error
    assert "--slo key 'fast'" in text_of(bad_slo)
    assert bad_hours.is_error
    assert "active_hours" in text_of(bad_hours)
