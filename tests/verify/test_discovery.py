"""Endpoint discovery (``/v1/models``, ``/version``): one way to ask, one way to name what went wrong."""

from __future__ import annotations

import httpx
import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig, free_port
from verify import discovery
from verify.client import make_client
from verify.streaming import FailureKind


async def test_max_model_len_is_read_from_the_model_list() -> None:
    """Guards against sending prompts longer than the server accepts (they would fail with 400)."""
    async with FakeVllm(FakeVllmConfig(max_model_len=4096)) as server, make_client(server.url, None) as client:
        models = await discovery.served_models(client)
        assert await discovery.vllm_version(client) == "0.32.0"
    card = discovery.find_card(models, "tiny-gemma")
    assert card is not None
    assert card.max_model_len == 4096
    assert discovery.find_card(models, "other") is None
    assert discovery.find_card(models, None) == card  # the one served model, when none was named


async def test_refused_connection_is_named_as_such() -> None:
    """Guards against a stopped server being reported as a timeout (httpx-aiohttp says ConnectTimeout)."""
    async with make_client(f"http://127.0.0.1:{free_port()}", None) as client:
        with pytest.raises(discovery.AnswerError) as caught:
            await discovery.served_models(client)
    assert caught.value.problem is discovery.AnswerProblem.TRANSPORT
    assert caught.value.failure is not None
    assert caught.value.failure.kind is FailureKind.CONNECT_ERROR


@pytest.mark.parametrize(
    ("body", "status", "problem"),
    [
        ("<html>not json</html>", 200, discovery.AnswerProblem.SHAPE),
        ('{"object": "list"}', 200, discovery.AnswerProblem.SHAPE),
        ("upstream connect error", 502, discovery.AnswerProblem.STATUS),
    ],
)
async def test_answers_that_are_not_a_model_list_are_named(
    body: str, status: int, problem: discovery.AnswerProblem
) -> None:
    """Guards against a proxy's page or a non-vLLM JSON body passing as "no models served"."""
    transport = httpx.MockTransport(lambda _request: httpx.Response(status, text=body))
    async with make_client("http://vllm.test", None, transport=transport) as client:
        with pytest.raises(discovery.AnswerError) as caught:
            await discovery.served_models(client)
    assert caught.value.problem is problem
    assert caught.value.status == status
    assert caught.value.body == body
