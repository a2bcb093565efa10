"""`verify query`: one free prompt, streamed, with TTFT, tokens/s, usage, finish reason and the model.

Against the local vLLM-shaped server (tests/fake_vllm.py) over real sockets, and, for reasoning, a
recorded-shape stream through ``httpx.MockTransport``. The CLI runs in a worker thread so its own
``asyncio.run`` does not collide with the loop serving the fake.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from pathlib import Path

import httpx
import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig, free_port
from tests.fault_server import serving
from verify import UsageError, cli
from verify.client import make_client
from verify.endpoint import AuthKind, Target
from verify.query.cli import live_printer, print_summary, read_prompt
from verify.query.run import QueryOptions, ReasoningDisplay, ask, run_query


async def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(cli.main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_query_streams_the_answer_then_ttft_tokens_per_second_and_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The done-when: a prompt in, the answer out as it streams, then TTFT, tok/s and usage (exit 0)."""
    async with FakeVllm(FakeVllmConfig(finish_reason="stop")) as server:
        code, out, err = await run_cli(capsys, "query", "--url", server.url, "--model", "tiny-gemma", "hello")
        sent = server.requests[-1].body
    assert code == 0, err
    assert out.startswith(" Hello from a fake server")
    assert "TTFT " in out
    assert "output tok/s" in out
    assert "usage: prompt 13, completion 5, reasoning not reported" in out
    assert "finish reason stop, model tiny-gemma" in out
    assert isinstance(sent, dict)
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert sent["stream"] is True
    assert sent["max_tokens"] == 512


async def test_query_json_is_one_document_with_every_number(capsys: pytest.CaptureFixture[str]) -> None:
    """--json (what the MCP tool reads) must hold the numbers, not a stream of text before them."""
    async with FakeVllm(FakeVllmConfig(ttft_s=0.05, itl_s=0.01)) as server:
        code, out, _ = await run_cli(capsys, "query", "--url", server.url, "hi", "--max-tokens", "3", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["asked_model"] == "tiny-gemma"  # discovered: the one model /v1/models lists
    assert document["served_model"] == "tiny-gemma"
    assert document["answer"] == " Hello from a"
    assert document["completion_tokens"] == 3
    assert document["finish_reason"] == "length"
    assert document["ttft_ms"] >= 50
    assert document["output_tokens_per_s"] > 0
    assert document["exit_code"] == 0


async def test_a_model_the_server_does_not_serve_fails_with_exit_1_and_the_cause(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with FakeVllm() as server:
        code, out, _ = await run_cli(capsys, "query", "--url", server.url, "--model", "gemma-4-31b-it", "hello")
    assert code == 1
    assert "FAILED: http_status (HTTP 404)" in out
    assert "does not serve a model named 'gemma-4-31b-it'" in out


async def test_an_unreachable_endpoint_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = await run_cli(
        capsys, "query", "--url", f"http://127.0.0.1:{free_port()}", "--model", "m", "hello", "--json"
    )
    assert code == 2
    assert json.loads(out)["failure"] == "connect_error"


async def test_a_stream_slower_than_the_deadline_is_cut_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """A total deadline bounds the request, however steadily the server keeps answering."""
    config = FakeVllmConfig(pieces=tuple(f" w{i}" for i in range(20)), itl_s=0.05)
    async with FakeVllm(config) as server:
        code, out, _ = await run_cli(
            capsys, "query", "--url", server.url, "--model", "tiny-gemma", "hello", "--deadline", "0.3", "--json"
        )
    document = json.loads(out)
    assert code == 1
    assert document["failure"] == "deadline_exceeded"
    assert document["answer"].startswith(" w0 w1")  # what arrived before the cut is kept


def _sse(*events: object) -> bytes:
    return b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events) + b"data: [DONE]\n\n"


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gemma-4-12b-it", "choices": [choice]}


# vLLM 0.32 with --reasoning-parser: reasoning deltas first, then content, then the usage chunk with
# completion_tokens_details.reasoning_tokens (vllm/entrypoints/openai/chat_completion/serving.py).
REASONING_STREAM = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"reasoning": "The user greets."}),
    _chunk({"reasoning": " Greet back."}),
    _chunk({"content": "Hello!"}),
    _chunk({"content": " How can I help?"}, "stop"),
    {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gemma-4-12b-it",
        "choices": [],
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": 14,
            "total_tokens": 23,
            "completion_tokens_details": {"reasoning_tokens": 8},
        },
    },
)


def _reasoning_client() -> httpx.AsyncClient:
    def answer(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=REASONING_STREAM)

    return make_client("http://vllm.test", None, transport=httpx.MockTransport(answer))


@pytest.mark.parametrize("display", list(ReasoningDisplay))
async def test_reasoning_is_kept_apart_from_the_answer_and_its_tokens_counted(display: ReasoningDisplay) -> None:
    """A reasoning model's thinking must not be printed as its answer; hidden, it still counts in usage."""
    out = io.StringIO()
    options = QueryOptions(prompt="hi", max_tokens=64, reasoning=display)
    async with _reasoning_client() as client:
        report = await ask(
            client, "http://vllm.test", options, model="gemma-4-12b-it", on_text=live_printer(out, display)
        )
    assert report.answer == "Hello! How can I help?"
    assert report.reasoning_tokens == 8
    assert report.completion_tokens == 14
    assert report.served_model == "gemma-4-12b-it"
    assert report.finish_reason == "stop"
    if display is ReasoningDisplay.SHOW:
        assert report.reasoning == "The user greets. Greet back."
        assert out.getvalue() == "[reasoning]\nThe user greets. Greet back.\n[answer]\nHello! How can I help?"
    else:
        assert report.reasoning is None
        assert out.getvalue() == "Hello! How can I help?"
    summary = io.StringIO()
    print_summary(report, summary)
    assert "reasoning 8" in summary.getvalue()


def _prompt_args(prompt: str | None = None, prompt_file: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(prompt=prompt, prompt_file=prompt_file)


def test_the_prompt_comes_from_an_argument_a_file_or_stdin(tmp_path: Path) -> None:
    path = tmp_path / "prompt.txt"
    path.write_text("from a file\n", encoding="utf-8")
    assert read_prompt(_prompt_args("as an argument")) == "as an argument"
    assert read_prompt(_prompt_args(prompt_file=path)) == "from a file\n"
    assert read_prompt(_prompt_args("-"), stdin=io.StringIO("from stdin")) == "from stdin"


@pytest.mark.parametrize(
    ("prompt", "from_file", "message"),
    [
        (None, False, "exactly one"),
        ("both", True, "exactly one"),
        ("   ", False, "the prompt is empty"),
        (None, True, "cannot be read"),
    ],
)
def test_a_missing_ambiguous_empty_or_unreadable_prompt_is_a_usage_error(
    tmp_path: Path, prompt: str | None, from_file: bool, message: str
) -> None:
    """Nothing is sent for a prompt the user did not clearly give; the message says how to give one."""
    with pytest.raises(UsageError, match=message):
        read_prompt(_prompt_args(prompt, tmp_path / "missing.txt" if from_file else None))


async def test_an_answer_that_arrives_in_one_burst_gets_no_decode_rate() -> None:
    """Measured against the shared CPU server under load: 24 tokens 0.2 ms after the first chunk read as
    "104,741 output tok/s". A buffered stream has no decode rate; the overall rate stays."""
    ticks = iter([0.0, 0.1])  # the request starts; then every chunk within microseconds of 100 ms

    def clock() -> float:
        return next(ticks, 0.10001)

    options = QueryOptions(prompt="hi", max_tokens=64)
    async with _reasoning_client() as client:
        report = await ask(client, "http://vllm.test", options, model="gemma-4-12b-it", clock=clock)
    assert report.output_tokens_per_s is None
    assert report.tokens_per_s_overall == pytest.approx(14 / 0.1, rel=1e-3)
    assert "burst" in (report.note or "")


def test_the_typed_function_asks_the_one_listed_model_and_streams_its_answer() -> None:
    """Guards against a tool (no argv) asking another model than `verify query` would: with no model named,
    the one /v1/models lists; the text streams to the caller as it arrives; the system message is sent."""
    heard: list[str] = []
    with serving(FakeVllm()) as server:
        target = Target(base_url=server.url, model=None, auth_kind=AuthKind.NONE, source="url")
        report = run_query(
            target,
            QueryOptions(prompt="hi", max_tokens=5, system="be brief"),
            on_text=lambda text, _reasoning: heard.append(text),
        )
        chats = [seen.body for seen in server.requests if seen.path == "/v1/chat/completions"]
    assert report.exit_code == 0
    assert report.asked_model == "tiny-gemma"
    assert "".join(heard) == report.answer
    assert isinstance(chats[0], dict)
    assert chats[0]["messages"][0] == {"role": "system", "content": "be brief"}
