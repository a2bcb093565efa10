"""Honest prompts: exactly the requested number of tokens, and never servable from the prefix cache.

Why: hand-made sweeps used one repeated word as the prompt, so vLLM's prefix cache served every
request after the first and "16K context" cost almost nothing. Here every prompt starts with a
unique run nonce and counter: vLLM hashes KV blocks as a chain from the first token, so a unique
first block makes every block of the prompt a cache miss. The body is a fixed stream of ordinary
words whose length is calibrated against the server's own tokenizer:

- ``POST /tokenize`` (with ``messages`` for the chat API, so the chat template's tokens count too)
  gives the exact count cheaply;
- servers without it get a probe request (``max_tokens=1``) whose ``usage.prompt_tokens`` says the
  same, at the price of a prefill.

The count aimed at is what the server sees (template included), which is what ``max_model_len``
limits; the actual mean ``prompt_tokens`` of every cell is recorded next to the requested one anyway.
"""

from __future__ import annotations

import enum
import random
import secrets
from dataclasses import dataclass
from typing import Protocol

import httpx
import pydantic

from verify.streaming import Api, StreamRequest, measure_stream

# Ordinary English words for the body: most are one or two tokens in any tokenizer, so the body's
# length is coarse-tuned in words and fine-tuned with single letters (see ``calibrate``).
FILLER_WORDS: tuple[str, ...] = (
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from",
    "his", "her", "they", "this", "which", "are", "be", "had", "not", "have", "one", "were", "but",
    "all", "their", "there", "when", "who", "more", "would", "been", "will", "what", "out", "said",
    "time", "about", "into", "other", "than", "then", "them", "these", "some", "could", "first",
    "water", "over", "after", "people", "long", "only", "made", "years", "way", "river", "city",
    "house", "world", "light", "music", "paper", "table", "window", "garden", "market", "school",
    "story", "morning", "evening", "winter", "summer", "letter", "number", "question", "answer",
    "country", "mountain", "island", "forest", "animal", "mother", "father", "family", "friend",
)  # fmt: skip
FILLER_SEED = 20261122
LETTERS = "abcdefghijklmnopqrstuvwxyz"
NONCE_LETTERS = 4
INDEX_LETTERS = 7  # 26**7: eight billion prompts per run
# Calibration steps before settling for the closest length not above the target.
MAX_CALIBRATION_STEPS = 8


class PromptLengthSource(enum.StrEnum):
    """How prompt lengths were measured; recorded with every cell."""

    TOKENIZE = "tokenize"
    PROBE = "usage-probe"


class PromptError(Exception):
    """Prompts of the requested length could not be built (the server did not count them)."""


class TokenCounter(Protocol):
    source: PromptLengthSource

    async def count(self, prompt: str) -> int:
        """Tokens the server sees for ``prompt`` sent through the benchmark's API."""
        ...


class _TokenizeAnswer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True)

    count: int
    max_model_len: int | None = None


class TokenizeCounter:
    """``POST /tokenize``: exact, and costs the server only tokenization."""

    source = PromptLengthSource.TOKENIZE

    def __init__(self, client: httpx.AsyncClient, model: str, api: Api) -> None:
        self._client = client
        self._model = model
        self._api = api

    async def count(self, prompt: str) -> int:
        body: dict[str, object] = {"model": self._model}
        if self._api is Api.CHAT:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        response = await self._client.post("/tokenize", json=body)
        if response.status_code != httpx.codes.OK:
            raise PromptError(f"POST /tokenize answered {response.status_code}: {response.text[:200]}")
        try:
            return _TokenizeAnswer.model_validate_json(response.content).count
        except pydantic.ValidationError as exc:
            raise PromptError(f"POST /tokenize answered something else than a token count: {exc}") from None


class ProbeCounter:
    """A one-token completion whose ``usage.prompt_tokens`` is the count (when /tokenize is absent)."""

    source = PromptLengthSource.PROBE

    def __init__(self, client: httpx.AsyncClient, model: str, api: Api) -> None:
        self._client = client
        self._model = model
        self._api = api

    async def count(self, prompt: str) -> int:
        probe = StreamRequest(model=self._model, prompt=prompt, max_tokens=1, api=self._api)
        result = await measure_stream(self._client, probe)
        if result.prompt_tokens is None:
            reason = result.failure.detail if result.failure else "no usage in the answer"
            raise PromptError(f"a probe request to count prompt tokens failed: {reason}")
        return result.prompt_tokens


async def choose_counter(client: httpx.AsyncClient, model: str, api: Api) -> TokenCounter:
    """``/tokenize`` when the server has it, else usage probes."""
    tokenize = TokenizeCounter(client, model, api)
    try:
        await tokenize.count("hello")
    except (PromptError, httpx.HTTPError):
        return ProbeCounter(client, model, api)
    return tokenize


def filler_body(words: int) -> str:
    """The first ``words`` words of one fixed pseudo-random stream (the same for every prompt)."""
    rng = random.Random(FILLER_SEED)  # noqa: S311 - filler text, not a secret
    return " ".join(rng.choice(FILLER_WORDS) for _ in range(words))


def new_nonce() -> str:
    """Four random letters per run: a rerun must not be served from the previous run's cache."""
    return "".join(secrets.choice(LETTERS) for _ in range(NONCE_LETTERS))


def _base26(value: int, width: int) -> str:
    digits = []
    for _ in range(width):
        value, digit = divmod(value, len(LETTERS))
        digits.append(LETTERS[digit])
    if value:
        raise PromptError(f"more than {len(LETTERS) ** width} prompts in one run")
    return "".join(reversed(digits))


def unique_prefix(nonce: str, index: int) -> str:
    """Single letters separated by spaces: one token each in SentencePiece and byte-level BPE
    vocabularies alike (digits are not: ``00`` merges, ``01`` does not), so every prompt's prefix
    has the same length whatever its index."""
    return " ".join(nonce + _base26(index, INDEX_LETTERS))


def _padding(letters: int) -> str:
    """``letters`` single-letter words: the fine adjustment, one token each."""
    return " ".join(LETTERS[i % len(LETTERS)] for i in range(letters))


def compose(prefix: str, words: int, pad_letters: int) -> str:
    """The one way a prompt is assembled, for calibration and for the measured requests alike."""
    return " ".join(part for part in (prefix, filler_body(words), _padding(pad_letters)) if part)


@dataclass(frozen=True, slots=True)
class PromptShape:
    """How to build prompts of one requested length: the prefix, ``body_words`` filler words, then
    ``pad_letters`` single letters."""

    requested: int
    body_words: int
    pad_letters: int
    measured: int  # the server's count for the calibration prompt
    source: PromptLengthSource

    @property
    def exact(self) -> bool:
        return self.measured == self.requested

    def prompt(self, prefix: str) -> str:
        return compose(prefix, self.body_words, self.pad_letters)


async def calibrate(counter: TokenCounter, requested: int, *, nonce: str) -> PromptShape:
    """Find the body whose prompt the server counts as exactly ``requested`` tokens.

    Coarse: scale the number of words by the measured tokens per word until the prompt is not longer
    than requested. Fine: add single letters (one token each) for the rest. When even an empty body
    is too long (tiny contexts behind a chat template), that is the shape; any miss shows up as
    ``actual_context`` differing from ``requested_context`` in the results.
    """
    prefix = unique_prefix(nonce, 0)
    empty = await counter.count(compose(prefix, 0, 0))
    if empty >= requested:
        return PromptShape(requested, 0, 0, empty, counter.source)
    words = requested - empty
    tokens = await counter.count(compose(prefix, words, 0))
    for _ in range(MAX_CALIBRATION_STEPS):
        if tokens <= requested:
            break
        per_word = (tokens - empty) / words
        words = max(0, int((requested - empty) / per_word) - 1)
        tokens = await counter.count(compose(prefix, words, 0))
    pad = max(0, requested - tokens)
    best = PromptShape(requested, words, 0, tokens, counter.source)
    for _ in range(MAX_CALIBRATION_STEPS):
        measured = await counter.count(compose(prefix, words, pad))
        shape = PromptShape(requested, words, pad, measured, counter.source)
        if abs(shape.measured - requested) < abs(best.measured - requested) or shape.exact:
            best = shape
        if shape.exact or pad + requested - shape.measured < 0:
            break
        pad += requested - shape.measured
    return best


class PromptBook:
    """Hands out prompts, each with a prefix no other prompt of this run has."""

    def __init__(self, nonce: str | None = None) -> None:
        self.nonce = nonce if nonce is not None else new_nonce()
        self._next_index = 1  # 0 is the calibration prompt

    def take(self, shape: PromptShape, count: int) -> list[str]:
        first = self._next_index
        self._next_index += count
        return [shape.prompt(unique_prefix(self.nonce, index)) for index in range(first, first + count)]
