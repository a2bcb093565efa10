"""The quality gate in `verify health --quality`: judged against stubs that serve or break each behaviour."""

from __future__ import annotations

import httpx
import pytest

from remote.tls import default_tls
from tests.fake_vllm import FakeVllmConfig, SpecDecodeValues
from tests.fault_server import serving
from tests.quality_stub import Breakage, QualityStub
from verify.cli import main
from verify.health.quality import (
    DEFAULT_MIN_ACCEPTANCE,
    DEFAULT_MIN_AGREEMENT,
    NEEDLE_ROOM_TOKENS,
    QualityOptions,
    promised_by,
    run_quality,
    schema_problems,
)

EVERYTHING = QualityOptions(expect_tool_calls=True, expect_reasoning=True, needle_tokens=256)


async def _results(breakage: Breakage | None = None) -> dict[str, tuple[bool, str]]:
    async with (
        QualityStub(breakage) as server,
        httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client,
    ):
        results = await run_quality(client, "tiny-gemma", EVERYTHING)
    return {result.name: (result.passed, result.saw) for result in results}


async def test_a_server_that_answers_right_passes_every_check() -> None:
    """Guards against a gate that fails a good deployment (each check's expected answer is derivable)."""
    results = await _results()
    assert list(results) == ["arithmetic", "json-format", "tool-call", "reasoning-split", "needle"]
    assert all(passed for passed, _ in results.values()), results


@pytest.mark.parametrize(
    ("breakage", "check", "saw"),
    [
        (Breakage(tool_call_as_text=True), "tool-call", "no tool call; content '<tool_call>get_weather("),
        (Breakage(tool_arguments_not_json=True), "tool-call", "arguments that do not parse as JSON"),
        (Breakage(no_reasoning=True), "reasoning-split", "reasoning 0 chars"),
        (Breakage(wrong_sum=True), "arithmetic", "'"),
    ],
)
async def test_each_regression_fails_its_check_and_names_what_it_saw(breakage: Breakage, check: str, saw: str) -> None:
    """Guards against a fast but wrong candidate (tool parser off, reasoning split gone) passing the gate."""
    results = await _results(breakage)
    passed, seen = results[check]
    assert not passed
    assert saw in seen
    assert all(ok for name, (ok, _) in results.items() if name != check)


def test_schema_problems_name_each_mismatch() -> None:
    assert schema_problems({"city": "Paris", "unit": "celsius"}, "Paris") == []
    assert schema_problems({"city": "Rome", "unit": "kelvin", "x": 1}, "Paris") == [
        "city 'Rome', not 'Paris'",
        "unit 'kelvin' is not one of celsius, fahrenheit",
        "undeclared argument 'x'",
    ]
    assert schema_problems(["Paris"], "Paris") == ["arguments are list, not an object"]


@pytest.mark.parametrize(("breakage", "code"), [(None, 0), (Breakage(tool_call_as_text=True), 1)])
def test_verify_health_reports_the_quality_checks_and_fails_on_a_broken_one(
    capsys: pytest.CaptureFixture[str], breakage: Breakage | None, code: int
) -> None:
    """The done-when: `verify health --quality` against a stub that breaks tool calls fails (exit 1) naming
    what it saw; against one that serves them it passes."""
    with serving(QualityStub(breakage)) as server:
        argv = ["health", "--url", server.url, "--model", "tiny-gemma", "--wait", "5", "--quality"]
        assert main([*argv, "--expect-tool-calls", "--expect-reasoning"]) == code
    out = capsys.readouterr().out
    assert "quality tool-call" in out
    if code:
        assert "no tool call" in out
        assert "checks failed: quality tool-call (exit 1)" in out
    else:
        assert "all 6 checks and 4 quality checks passed" in out


def test_quality_flags_need_quality(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "--url", "http://127.0.0.1:9", "--expect-tool-calls"]) == 2
    assert "need --quality" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "passed", "saw"),
    [
        (SpecDecodeValues(draft_tokens=300.0, accepted_tokens=210.0), True, "acceptance 70.0% (210 of 300"),
        (SpecDecodeValues(draft_tokens=300.0, accepted_tokens=15.0), False, "acceptance 5.0%"),
        (None, False, "speculative decoding is not on"),
    ],
)
async def test_the_mtp_acceptance_must_reach_its_floor(spec: SpecDecodeValues | None, passed: bool, saw: str) -> None:
    """Guards against an MTP head that no longer matches its model (answers right, drafts all rejected)."""
    config = FakeVllmConfig(spec_decode=spec)
    async with (
        QualityStub(None, config) as server,
        httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client,
    ):
        results = await run_quality(client, "tiny-gemma", QualityOptions(min_acceptance=0.3))
    result = results[-1]
    assert result.name == "spec-acceptance"
    assert result.passed is passed
    assert saw in result.saw


def test_promote_takes_the_checks_the_stacks_vllm_args_promise() -> None:
    """Guards against a promote gate that skips the tool-call, reasoning, MTP or needle checks the stack's own
    configuration makes promises about."""
    args = ["/m", "--tool-call-parser", "gemma4", "--reasoning-parser", "gemma4", "--speculative-config", "{}"]
    promised = promised_by(args, 8192, QualityOptions())
    assert promised.expect_tool_calls
    assert promised.expect_reasoning
    assert promised.min_acceptance == DEFAULT_MIN_ACCEPTANCE
    assert promised.needle_tokens == 8192 - NEEDLE_ROOM_TOKENS
    plain = promised_by(["/m"], None, QualityOptions())
    assert plain == QualityOptions(min_agreement=DEFAULT_MIN_AGREEMENT)  # a candidate always agrees, or is refused
