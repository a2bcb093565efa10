"""Honest prompts: exact lengths as the server counts them, and prefixes the cache cannot serve."""

from __future__ import annotations

import httpx
import pytest

from remote.tls import default_tls
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from verify.bench.prompts import (
    ProbeCounter,
    PromptBook,
    PromptLengthSource,
    PromptShape,
    TokenizeCounter,
    calibrate,
    choose_counter,
    unique_prefix,
)
from verify.client import aiohttp_transport
from verify.streaming import Api

TEMPLATE_TOKENS = 7


def word_server(**overrides: object) -> FakeVllm:
    fields: dict[str, object] = {"count_prompt_words": True, "chat_template_tokens": TEMPLATE_TOKENS}
    fields.update(overrides)
    return FakeVllm(FakeVllmConfig(**fields))  # type: ignore[arg-type]


@pytest.mark.parametrize("api", list(Api))
@pytest.mark.parametrize("requested", [64, 1000])
async def test_calibrated_prompts_have_exactly_the_requested_tokens(api: Api, requested: int) -> None:
    """Guards against "1024-token" prompts that are really 950 or 1100 tokens (chat template included)."""
    async with word_server() as server, httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client:
        counter = await choose_counter(client, "tiny-gemma", api)
        assert counter.source is PromptLengthSource.TOKENIZE
        book = PromptBook()
        shape = await calibrate(counter, requested, nonce=book.nonce)
        prompts = book.take(shape, 5)
        counts = [await counter.count(prompt) for prompt in prompts]
    assert shape.exact
    assert counts == [requested] * 5


async def test_without_tokenize_usage_probes_calibrate_the_same() -> None:
    """Guards against servers without /tokenize (or behind a proxy hiding it) getting unmeasured prompts."""
    server = word_server(tokenize_route=False)
    async with server, httpx.AsyncClient(base_url=server.url, transport=aiohttp_transport()) as client:
        counter = await choose_counter(client, "tiny-gemma", Api.CHAT)
        assert isinstance(counter, ProbeCounter)
        shape = await calibrate(counter, 300, nonce="abcd")
    assert shape.source is PromptLengthSource.PROBE
    assert shape.measured == 300
    probes = [r for r in server.requests if r.path == "/v1/chat/completions"]
    assert probes
    assert all(isinstance(r.body, dict) and r.body["max_tokens"] == 1 for r in probes)


def test_every_prompt_starts_differently_and_prefixes_have_one_length() -> None:
    """Guards against prompts the prefix cache can serve (the hand-made sweeps repeated one word) and
    against prefixes whose token count varies with the index (digits merge in BPE vocabularies)."""
    book = PromptBook(nonce="qzxw")
    shape = PromptShape(requested=100, body_words=40, pad_letters=3, measured=100, source=PromptLengthSource.TOKENIZE)
    prompts = book.take(shape, 300) + book.take(shape, 300)
    # vLLM hashes KV blocks as a chain from the first token: distinct first 16 tokens (here words) suffice.
    first_blocks = {" ".join(prompt.split()[:16]) for prompt in prompts}
    assert len(first_blocks) == len(prompts) == 600
    assert {len(prompt.split()) for prompt in prompts} == {11 + 40 + 3}
    assert all(len(token) == 1 for token in unique_prefix("qzxw", 12345678).split())
    # A rerun gets another nonce, so it cannot hit the cache the previous run filled.
    assert len({PromptBook().nonce for _ in range(20)}) > 1


async def test_context_shorter_than_the_template_is_reported_not_faked() -> None:
    """Guards against claiming a 4-token prompt when the chat template alone is longer."""
    async with word_server() as server, httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client:
        shape = await calibrate(TokenizeCounter(client, "tiny-gemma", Api.CHAT), 4, nonce="abcd")
    assert not shape.exact
    assert shape.measured == TEMPLATE_TOKENS + 11
    assert shape.body_words == 0
