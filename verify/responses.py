"""What a vLLM 0.32 server answers, as pydantic models: responses are parsed here, at the edge.

Only the fields verify reads are declared; everything else vLLM sends is ignored, so a newer vLLM
that adds fields still parses. Shapes were recorded against a real `vllm serve` 0.32.0.
"""

from __future__ import annotations

import pydantic

from remote.text import escape_controls


class _Answer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True)


class ModelCard(_Answer):
    id: str
    root: str | None = None
    max_model_len: int | None = None
    # The base model's served name for a LoRA adapter vLLM has loaded (None for a base model).
    parent: str | None = None


class ModelList(_Answer):
    """``GET /v1/models``."""

    data: list[ModelCard]

    @property
    def names(self) -> list[str]:
        return [card.id for card in self.data]


class VersionInfo(_Answer):
    """``GET /version``."""

    version: str


class Usage(_Answer):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int | None = None


class ChatMessage(_Answer):
    role: str | None = None
    content: str | None = None
    # vLLM 0.32 names the reasoning parser's output `reasoning`; older servers said `reasoning_content`.
    reasoning: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict[str, object]] | None = None

    @property
    def reasoning_text(self) -> str:
        return self.reasoning or self.reasoning_content or ""


class ChatChoice(_Answer):
    message: ChatMessage
    finish_reason: str | None = None


class ChatCompletion(_Answer):
    """``POST /v1/chat/completions`` without streaming."""

    object: str | None = None
    model: str | None = None
    choices: list[ChatChoice]
    usage: Usage | None = None
    system_fingerprint: str | None = None


class _ErrorDetail(_Answer):
    message: str
    type: str | None = None
    code: int | str | None = None


class ErrorBody(_Answer):
    """vLLM's error shapes: ``{"error": {...}}`` from the OpenAI routes, ``{"error": "Unauthorized"}``
    from the API-key check, and ``{"detail": ...}`` from the web framework (unknown paths)."""

    error: _ErrorDetail | str | None = None
    detail: str | None = None

    @property
    def message(self) -> str | None:
        if isinstance(self.error, _ErrorDetail):
            return self.error.message
        return self.error or self.detail


def body_excerpt(text: str, limit: int = 200) -> str:
    """A body on one line, cut to ``limit`` characters: enough to show vLLM's error message, short
    enough for a table cell. Whitespace runs collapse so HTML error pages stay readable."""
    flat = escape_controls(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def error_message(body: str) -> str | None:
    """The human part of an error body, or None when the body is not one of vLLM's error shapes."""
    try:
        message = ErrorBody.model_validate_json(body).message
    except pydantic.ValidationError:
        return None
    return None if message is None else escape_controls(message)
