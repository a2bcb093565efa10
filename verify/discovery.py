"""What an endpoint serves (``/v1/models``, ``/version``), asked one way by every subcommand.

Why one module: ``verify health`` judges the answer, ``verify bench`` needs the served name and its
``max_model_len`` before measuring, and both must read the same fields, send the same requests and
name the same problems. Callers phrase the outcome for their own user (a failed check, or a usage
error before a sweep); what went wrong is decided here.
"""

from __future__ import annotations

import enum
from typing import TypeVar

import httpx
import pydantic

from verify.responses import ModelCard, ModelList, VersionInfo
from verify.streaming import StreamFailure, classify_transport_error

MODELS_PATH = "/v1/models"
VERSION_PATH = "/version"

_Shape = TypeVar("_Shape", bound=pydantic.BaseModel)


class AnswerProblem(enum.StrEnum):
    TRANSPORT = "transport"  # no answer: refused, reset, timed out
    STATUS = "status"  # an answer other than 200
    SHAPE = "shape"  # 200, but not the JSON vLLM sends there


class AnswerError(Exception):
    """A GET that did not produce the JSON expected; carries what a caller needs to explain it."""

    def __init__(
        self,
        path: str,
        problem: AnswerProblem,
        *,
        failure: StreamFailure | None = None,
        status: int | None = None,
        body: str = "",
    ) -> None:
        super().__init__(f"GET {path}: {problem.value}")
        self.path = path
        self.problem = problem
        self.failure = failure
        self.status = status
        self.body = body


async def get_json(client: httpx.AsyncClient, path: str, shape: type[_Shape]) -> _Shape:
    """GET ``path`` and parse it into ``shape``; raises ``AnswerError`` for anything else.

    Credential problems (``verify.auth.AuthError``) pass through: they are usage errors, not answers.
    """
    try:
        response = await client.get(path)
    except httpx.HTTPError as exc:
        raise AnswerError(path, AnswerProblem.TRANSPORT, failure=classify_transport_error(exc)) from exc
    if response.status_code != httpx.codes.OK:
        raise AnswerError(path, AnswerProblem.STATUS, status=response.status_code, body=response.text)
    try:
        return shape.model_validate_json(response.content)
    except pydantic.ValidationError:
        raise AnswerError(path, AnswerProblem.SHAPE, status=response.status_code, body=response.text) from None


async def served_models(client: httpx.AsyncClient) -> ModelList:
    """``GET /v1/models``; raises ``AnswerError``."""
    return await get_json(client, MODELS_PATH, ModelList)


def find_card(models: ModelList, wanted: str | None) -> ModelCard | None:
    """The card of ``wanted``; with no name given, the only card when exactly one model is served."""
    if wanted is None:
        return models.data[0] if len(models.data) == 1 else None
    return next((card for card in models.data if card.id == wanted), None)


def answer_names(models: ModelList, card: ModelCard) -> frozenset[str]:
    """Every name an answer to ``card`` may carry as its model: the card's own, and for a base model its
    aliases (the cards of the same weights, ``root``): vLLM names the first ``--served-model-name`` in every
    chunk whichever alias was asked. An adapter answers under its own name only."""
    if card.parent is not None or card.root is None:
        return frozenset({card.id})
    return frozenset(
        {card.id} | {other.id for other in models.data if other.parent is None and other.root == card.root}
    )


async def vllm_version(client: httpx.AsyncClient) -> str:
    """``GET /version``; raises ``AnswerError``."""
    return (await get_json(client, VERSION_PATH, VersionInfo)).version
