"""query and metrics as an agent calls them: `verify query` and `verify metrics` (in-process here, a child of
the server in use: tests/gemma_mcp/conftest.py), against a real local socket."""

from __future__ import annotations

from tests.fake_vllm import FakeVllm, FakeVllmConfig, MetricsValues
from tests.gemma_mcp.conftest import connect, text_of


async def test_query_returns_the_answer_with_its_numbers() -> None:
    """The agent must get the answer and TTFT, tokens/s, usage and the model, structured and in the text."""
    async with FakeVllm(FakeVllmConfig(finish_reason="stop")) as server, connect() as client:
        result = await client.call_tool(
            "query", {"url": server.url, "model": "tiny-gemma", "prompt": "--not-a-flag hello", "max_tokens": 16}
        )
        sent = server.requests[-1].body
    assert not result.is_error, result.content
    found = result.structured_content
    assert found["passed"] is True
    document = found["report"]
    assert document["answer"] == " Hello from a fake server"
    assert document["completion_tokens"] == 5
    assert document["served_model"] == "tiny-gemma"
    assert document["ttft_ms"] is not None
    # A prompt that looks like a flag is still the prompt, and the recorded command does not repeat it.
    assert isinstance(sent, dict)
    assert sent["messages"][-1]["content"] == "--not-a-flag hello"
    assert "<prompt: 18 characters>" in found["command"]
    assert text_of(result).startswith("query: answered")


async def test_query_refuses_unbounded_or_empty_requests_before_anything_runs() -> None:
    async with connect() as client:
        empty = await client.call_tool("query", {"url": "http://127.0.0.1:1", "prompt": "  "})
        huge = await client.call_tool("query", {"url": "http://127.0.0.1:1", "prompt": "hi", "max_tokens": 10**6})
        forever = await client.call_tool("query", {"url": "http://127.0.0.1:1", "prompt": "hi", "deadline_s": 1e9})
        odd = await client.call_tool("query", {"url": "http://127.0.0.1:1", "prompt": "hi", "reasoning": "maybe"})
    assert "prompt:" in text_of(empty)
    assert "max_tokens:" in text_of(huge)
    assert "deadline_s:" in text_of(forever)
    assert "reasoning:" in text_of(odd)
    assert all(result.is_error for result in (empty, huge, forever, odd))


async def test_metrics_reads_the_server_once_or_over_a_window() -> None:
    config = FakeVllmConfig(metrics=MetricsValues(running=3, waiting=1, kv_cache_usage=0.5))
    async with FakeVllm(config) as server, connect() as client:
        once = await client.call_tool("metrics", {"url": server.url})
        window = await client.call_tool("metrics", {"url": server.url, "window_s": 0.05})
        refused = await client.call_tool("metrics", {"url": server.url, "window_s": 86400})
    assert once.structured_content["report"]["running"] == 3
    assert once.structured_content["report"]["window"]["kind"] == "since the server started"
    assert window.structured_content["report"]["window"]["kind"] == "window"
    assert "running 3" in text_of(once)
    assert refused.is_error
    assert "window_s:" in text_of(refused)
