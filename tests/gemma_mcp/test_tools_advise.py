"""The advise tool through a real MCP client session: the agent gets the CLI's ranked answer and its bases."""

from __future__ import annotations

from tests.gemma_mcp.conftest import connect, text_of


async def test_advise_answers_the_issues_question_with_bases() -> None:
    """An agent asked "cheapest for 8k prompts, 512-token answers, 50 users, p95 TTFT under 2 s" gets the rows
    the CLI prints, each priced per 1M tokens with the basis of its numbers."""
    async with connect() as client:
        result = await client.call_tool(
            "advise",
            {"prompt_tokens": 8192, "output_tokens": 512, "users": 50, "slo": ["p95_ttft_ms=2000"], "top": 3},
        )
    assert not result.is_error, text_of(result)
    report = result.structured_content
    assert len(report["rows"]) == 3
    assert all(row["p95_ttft_ms"] <= 2000 for row in report["rows"])
    assert all(row["latency_basis"]["kind"] == "estimated" for row in report["rows"])
    text = text_of(result)
    assert "$/1M out" in text
    assert "excluded:" in text


async def test_advise_refuses_a_bad_slo_naming_the_keys() -> None:
    """A misspelt SLO must not be dropped silently: the tool errs naming what is allowed."""
    async with connect() as client:
        result = await client.call_tool(
            "advise", {"prompt_tokens": 8192, "output_tokens": 512, "users": 50, "slo": ["ttft=2000"]}
        )
    assert result.is_error
    assert "p95_ttft_ms" in text_of(result)
