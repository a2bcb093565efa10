"""Quality in advise's answer: the cheapest deployment per model beside its model card score, one ranking on a
quality floor or a model list, one row per deployment, and what each row gives up and saves."""

from __future__ import annotations

import pytest

from serving.catalog import catalog
from serving.quality import quality_book
from tests.gemma_mcp.conftest import connect, text_of
from verify.advise.options import AdviseOptions, Slo
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise
from verify.cli import main as verify_main

QUESTION = AdviseOptions(prompt_tokens=8192, output_tokens=512, users=50, slo=Slo(p95_ttft_ms=2000))


@pytest.fixture(scope="module")
def per_model() -> AdviseReport:
    return run_advise(QUESTION)


def test_every_catalog_model_has_published_scores_with_their_source() -> None:
    """A model without a score would rank last as if it were the weakest; a score without a source cannot be
    checked. Every catalog model has the primary benchmark, its source and the day it was read."""
    book = quality_book()
    for model_id in catalog():
        entry = book.models[model_id]
        assert book.primary in entry.scores, model_id
        assert entry.source.startswith(("Gemma 4", "http")), model_id
        assert entry.read.year >= 2026
    for model in catalog().values():
        for variant in model.variants:
            assert variant in book.variants, f"{model.id} {variant}: no published-loss entry"


def test_the_default_answer_is_the_cheapest_deployment_of_each_model_best_first(per_model: AdviseReport) -> None:
    """The RAG chatbot question once got the E2B (the weakest model) as rank 1 with nothing saying it was weaker.
    By default each model that meets the SLO gets one row, its cheapest, ordered by its model card score, with
    the score beside it; each row but the best says what it gives up and saves against the next better one."""
    rows = per_model.rows
    models = [row.model for row in rows]
    assert len(models) == len(set(models)) >= 3
    scores = [row.quality_score for row in rows]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    full = run_advise(QUESTION.model_copy(update={"one_ranking": True, "top": 500}))
    for row in rows:
        cheapest = min(
            r.usd_per_month for r in full.rows if r.model == row.model and r.support_confirmed == row.support_confirmed
        )
        assert row.usd_per_month == pytest.approx(cheapest)
    assert rows[0].versus is None
    for row in rows[1:]:
        assert row.versus is not None
        assert "gives up" in row.versus
        assert "MMLU Pro" in row.versus
    text = render(per_model)
    assert "MMLU Pro 85.2" in text
    assert "best model first" in text
    assert "gives up" in text


def test_a_quality_floor_or_a_model_list_gives_one_ranking() -> None:
    """`--min-score mmlu_pro=80` keeps only the models whose model card meets it, in one ranking cheapest first,
    and says which models fell below; `--models a,b` ranks those two together."""
    floor = run_advise(QUESTION.model_copy(update={"min_scores": (("mmlu_pro", 80.0),), "top": 50}))
    assert floor.rows
    assert {row.model for row in floor.rows} <= {"gemma-4-31b-it", "gemma-4-26b-a4b-it"}
    confirmed = [row.usd_per_month for row in floor.rows if row.support_confirmed]
    assert confirmed == sorted(confirmed)
    assert any(e.reason == "below the quality floor" for e in floor.excluded)
    assert "one ranking" in floor.answer
    listed = run_advise(QUESTION.model_copy(update={"models": ("gemma-4-12b-it", "gemma-4-e4b-it"), "top": 50}))
    assert {row.model for row in listed.rows} == {"gemma-4-12b-it", "gemma-4-e4b-it"}
    assert len(listed.rows) > 2


def test_no_two_rows_are_the_same_deployment_under_two_names() -> None:
    """bf16 and qat-q4_0-unquantized (the QAT checkpoint stored in bf16: the same bytes to read) were two identical
    rows. Rows equal but for the variant's name are one, naming both."""
    report = run_advise(QUESTION.model_copy(update={"one_ranking": True, "top": 500}))
    seen: set[tuple[object, ...]] = set()
    for row in report.rows:
        key: tuple[object, ...] = (row.model, row.shape, row.platform, row.provisioning, row.replicas, row.zone)
        key += (round(row.usd_per_month, 2), round(row.p95_ttft_ms, 1), round(row.tpot_ms, 2), row.speculative_tokens)
        assert key not in seen, f"{row.model} {row.variant} on {row.shape} twice"
        seen.add(key)
    merged = [row for row in report.rows if "qat-q4_0-unquantized" in row.same_as]
    assert merged
    assert "bf16 = qat-q4_0-unquantized" in render(report)


def test_an_unknown_benchmark_is_a_usage_error_naming_the_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    """A misspelt floor must not be dropped (every model would pass it): exit 2 naming the benchmarks."""
    code = verify_main(
        ["advise", "--prompt-tokens", "512", "--output-tokens", "64", "--users", "1", "--min-score", "mmlu=80"]
    )
    assert code == 2
    assert "mmlu_pro" in capsys.readouterr().err


async def test_the_mcp_tool_gives_the_same_per_model_answer_and_takes_a_floor(per_model: AdviseReport) -> None:
    """An agent gets the CLI's answer: the per-model rows by default, one ranking with min_scores."""
    async with connect() as client:
        result = await client.call_tool(
            "advise", {"prompt_tokens": 8192, "output_tokens": 512, "users": 50, "slo": ["p95_ttft_ms=2000"]}
        )
        floored = await client.call_tool(
            "advise",
            {
                "prompt_tokens": 8192,
                "output_tokens": 512,
                "users": 50,
                "slo": ["p95_ttft_ms=2000"],
                "min_scores": ["mmlu_pro=80"],
            },
        )
    assert not result.is_error, text_of(result)
    assert [row["model"] for row in result.structured_content["rows"]] == [row.model for row in per_model.rows]
    assert not floored.is_error, text_of(floored)
    assert {row["model"] for row in floored.structured_content["rows"]} <= {"gemma-4-31b-it", "gemma-4-26b-a4b-it"}
