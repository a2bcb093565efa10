"""The health checks end to end against a local vLLM-0.32-shaped server over real sockets."""

from __future__ import annotations

import pytest

from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig, MetricsValues, SpecDecodeValues
from verify.client import make_client
from verify.endpoint import AuthKind, Target
from verify.health import CheckName, CheckOptions, CheckResult, CheckStatus, HealthReport, run_checks


def local_target(url: str, model: str | None = "tiny-gemma") -> Target:
    return Target(base_url=url, model=model, auth_kind=AuthKind.NONE, source="url")


async def health_of(config: FakeVllmConfig, model: str | None = "tiny-gemma") -> tuple[HealthReport, FakeVllm]:
    async with FakeVllm(config) as server, make_client(server.url, None) as client:
        report = await run_checks(client, local_target(server.url, model), CheckOptions(wait_s=0))
    return report, server


def check(report: HealthReport, name: CheckName) -> CheckResult:
    return next(result for result in report.checks if result.name is name)


async def test_healthy_server_passes_every_check_in_order() -> None:
    """The happy path: six checks, in the documented order, all passing, exit 0."""
    report, server = await health_of(FakeVllmConfig())
    assert [result.name for result in report.checks] == list(CheckName)
    assert [result.status for result in report.checks] == [CheckStatus.PASS] * 6
    assert report.exit_code == 0
    assert report.vllm_version == "0.32.0"
    assert report.target.model == "tiny-gemma"
    assert not report.target.model_discovered
    assert check(report, CheckName.CHAT).facts["completion_tokens"] == 5
    assert all(result.duration_s >= 0 for result in report.checks)
    chat_bodies = [seen.body for seen in server.requests if seen.path == CHAT_PATH]
    assert len(chat_bodies) == 2
    for body in chat_bodies:
        assert isinstance(body, dict)
        assert "ignore_eos" not in body  # a model that stops at once must be caught, not forced on
        assert body["temperature"] == 0
    streamed = [body for body in chat_bodies if isinstance(body, dict) and body.get("stream")]
    assert streamed[0]["stream_options"] == {"include_usage": True}


async def test_missing_model_is_discovered_and_said_so() -> None:
    """No --model: use the one served name and mark it as discovered in the report."""
    report, _ = await health_of(FakeVllmConfig(served_name="gemma-4-12b"), model=None)
    assert report.exit_code == 0
    assert report.target.model == "gemma-4-12b"
    assert report.target.model_discovered
    assert "no --model given" in check(report, CheckName.MODELS).summary


async def test_wrong_served_name_fails_listing_what_is_served() -> None:
    """Clients using another name get 404: the report must show the names the server does serve."""
    report, _ = await health_of(FakeVllmConfig(served_name="google/gemma-4-12b-it"), model="gemma-4-12b")
    models = check(report, CheckName.MODELS)
    assert models.status is CheckStatus.FAIL
    assert "google/gemma-4-12b-it" in (models.got or "")
    assert "--served-model-name" in (models.cause or "")
    assert check(report, CheckName.VERSION).status is CheckStatus.PASS
    assert check(report, CheckName.CHAT).status is CheckStatus.SKIPPED
    assert check(report, CheckName.CHAT_STREAM).status is CheckStatus.SKIPPED
    assert check(report, CheckName.METRICS).status is CheckStatus.PASS
    assert report.exit_code == 1


async def test_empty_content_fails_both_chat_checks() -> None:
    """A server that answers 200 with no text is the failure users otherwise find in production."""
    report, _ = await health_of(FakeVllmConfig(pieces=(), finish_reason="stop"))
    chat = check(report, CheckName.CHAT)
    assert chat.status is CheckStatus.FAIL
    assert "empty content" in chat.summary
    assert "content=''" in (chat.got or "")
    assert chat.expected
    assert "stopped at once" in (chat.cause or "")
    stream = check(report, CheckName.CHAT_STREAM)
    assert stream.status is CheckStatus.FAIL
    assert "empty_output" in (stream.got or "")
    assert report.exit_code == 1


async def test_whitespace_only_content_counts_as_empty() -> None:
    """Newlines only (a mismatched chat template's typical output) must not pass as "non-empty"."""
    report, _ = await health_of(FakeVllmConfig(pieces=("\n", "\n", " ")))
    assert check(report, CheckName.CHAT).status is CheckStatus.FAIL
    assert "whitespace-only" in check(report, CheckName.CHAT).summary
    assert check(report, CheckName.CHAT_STREAM).status is CheckStatus.FAIL


async def test_reasoning_only_text_passes_with_a_note() -> None:
    """With a reasoning parser, a short budget may be spent thinking: healthy, but say where the text is."""
    report, _ = await health_of(FakeVllmConfig(text_field="reasoning"))
    chat = check(report, CheckName.CHAT)
    assert chat.status is CheckStatus.PASS
    assert "only in reasoning" in chat.summary
    assert check(report, CheckName.CHAT_STREAM).status is CheckStatus.PASS


async def test_missing_usage_fails_the_chat_check() -> None:
    report, _ = await health_of(FakeVllmConfig(omit_usage=True))
    assert "no usage" in check(report, CheckName.CHAT).summary
    stream = check(report, CheckName.CHAT_STREAM)
    assert stream.status is CheckStatus.FAIL
    assert "usage" in (stream.got or "")


async def test_stream_cut_mid_way_is_reported_as_interrupted() -> None:
    """A stream that stops before data: [DONE] (proxy timeout, crash) must fail, naming the cut."""
    report, _ = await health_of(FakeVllmConfig(cut_stream_after_chunks=2))
    assert check(report, CheckName.CHAT).status is CheckStatus.PASS
    stream = check(report, CheckName.CHAT_STREAM)
    assert stream.status is CheckStatus.FAIL
    assert "stream_interrupted" in (stream.got or "")
    assert "[DONE]" in (stream.cause or "")
    assert report.exit_code == 1


async def test_malformed_sse_is_reported_with_the_offending_data() -> None:
    report, _ = await health_of(FakeVllmConfig(malformed_sse_after_chunks=1))
    stream = check(report, CheckName.CHAT_STREAM)
    assert stream.status is CheckStatus.FAIL
    assert "malformed_stream" in (stream.got or "")
    assert '{"id": "broken"' in (stream.got or "")
    assert "proxy" in (stream.cause or "")


async def test_ttft_is_measured_to_the_first_text_chunk() -> None:
    """TTFT must include the server's delay before the first text, not stop at the role-only chunk."""
    report, _ = await health_of(FakeVllmConfig(ttft_s=0.1, itl_s=0.01))
    facts = check(report, CheckName.CHAT_STREAM).facts
    ttft_ms = facts["ttft_ms"]
    assert isinstance(ttft_ms, float)
    assert 95 <= ttft_ms < 450  # the role-only chunk comes at once: timing it would read about 0
    assert facts["output_tokens"] == 5
    assert facts["tokens_per_s"] is not None


async def test_tokens_come_from_usage_not_chunks() -> None:
    """With speculative decoding a chunk carries several tokens; counting chunks would under-report."""
    report, _ = await health_of(FakeVllmConfig(tokens_per_piece=3))
    facts = check(report, CheckName.CHAT_STREAM).facts
    assert facts["output_tokens"] == 15
    assert facts["text_chunks"] == 5


async def test_metrics_summary_with_spec_decode() -> None:
    config = FakeVllmConfig(
        metrics=MetricsValues(running=2, waiting=1, kv_cache_usage=0.5, prefix_cache_queries=200, prefix_cache_hits=50),
        spec_decode=SpecDecodeValues(drafts=10, draft_tokens=30, accepted_tokens=24),
    )
    report, _ = await health_of(config)
    metrics = check(report, CheckName.METRICS)
    assert metrics.status is CheckStatus.PASS
    assert metrics.facts["spec_decode_acceptance_rate"] == pytest.approx(0.8)
    assert metrics.facts["prefix_cache_hit_rate"] == pytest.approx(0.25)
    assert "acceptance 80.0%" in metrics.summary
    assert "KV cache 50.0%" in metrics.summary


async def test_metrics_summary_without_spec_decode_says_off() -> None:
    report, _ = await health_of(FakeVllmConfig())
    metrics = check(report, CheckName.METRICS)
    assert "spec decode off" in metrics.summary
    assert metrics.facts["spec_decode_acceptance_rate"] is None
    assert metrics.facts["spec_decode_enabled"] is False


async def test_metrics_that_are_not_prometheus_fail_with_an_excerpt() -> None:
    report, _ = await health_of(FakeVllmConfig(metrics_body="<html><body>Bad Gateway</body></html>"))
    metrics = check(report, CheckName.METRICS)
    assert metrics.status is CheckStatus.FAIL
    assert "Bad Gateway" in (metrics.got or "")


@pytest.mark.parametrize(
    ("status", "cause_words"),
    [(429, "concurrency x max instances"), (504, "request timeout"), (503, "restarting")],
)
async def test_platform_statuses_on_chat_name_the_platform_cause(status: int, cause_words: str) -> None:
    """Cloud Run's own 429/503/504 must be told apart from model errors."""
    report, _ = await health_of(FakeVllmConfig(status_sequences={CHAT_PATH: [status]}))
    chat = check(report, CheckName.CHAT)
    assert chat.status is CheckStatus.FAIL
    assert (chat.got or "").startswith(str(status))
    assert cause_words in (chat.cause or "")
    assert check(report, CheckName.CHAT_STREAM).status is CheckStatus.PASS  # one burst, then fine


async def test_vllm_error_message_is_quoted_in_the_cause() -> None:
    """vLLM's own 400 message (e.g. max_tokens above max_model_len) must reach the user."""
    async with FakeVllm(FakeVllmConfig(max_model_len=16)) as server, make_client(server.url, None) as client:
        report = await run_checks(client, local_target(server.url), CheckOptions(wait_s=0, max_tokens=32))
    chat = check(report, CheckName.CHAT)
    assert chat.status is CheckStatus.FAIL
    assert "maximum context length is 16" in (chat.cause or "")
