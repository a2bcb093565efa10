"""The quality gate: is what the endpoint serves *right*, not only fast (``verify health --quality``).

Why: a cheaper variant, speculative decoding or a new image can answer quickly and wrongly: tool calls
that no longer parse, the reasoning split gone, a context window that forgets. Each check below is
generated here (nothing downloaded, no external dataset), asks at temperature 0, and is judged exactly;
each result names what it saw. The gate fails closed: an error, an unparsable answer or a missing field
is a failure, never a skip.

- ``arithmetic``: the sum of two numbers drawn from a seeded generator, answered as the number only.
- ``json-format``: a small JSON object to repeat back exactly; it must parse and be equal.
- ``tool-call`` (``expect_tool_calls``: the stack runs ``--enable-auto-tool-choice --tool-call-parser``): a
  declared function must be called; its arguments must parse as JSON and match the declared schema
  (required keys, types, the enum) with the city asked for.
- ``reasoning-split`` (``expect_reasoning``: a ``--reasoning-parser``): the answer must carry its reasoning
  apart (``reasoning``/``reasoning_content``) and a final answer.
- ``spec-acceptance`` (``min_acceptance``: speculative decoding is on): after the checks above, the
  server's own draft acceptance rate (``vllm:spec_decode_num_accepted_tokens`` over ``..._draft_tokens``)
  must reach the floor; an MTP head that stopped matching the model still answers right, only slower.
- ``agreement`` (promote only): fixed prompts at temperature 0 answered exactly as the revision serving now
  answers them (``DEFAULT_MIN_AGREEMENT`` of them): a candidate that is fast but says something else is refused.
- ``needle`` (``needle_tokens``: the stack's max length less room for the answer): a code hidden in the
  middle of that many tokens of filler (sized with the server's ``/tokenize``) must be answered back.

A tiny random model (the CPU server of the live tests) fails them all, as it should; the tests prove the
judging against local stubs that serve or break each behaviour.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import httpx
import pydantic

from verify import streaming
from verify.prom import MetricsParseError, parse_metrics
from verify.responses import ChatCompletion, ChatMessage, body_excerpt
from verify.streaming import Clock

QUALITY_SEED = 20261126
ANSWER_TOKENS = 64
TOOL_NAME = "get_weather"
TOOL_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "the city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
}
CITIES = ("Paris", "Lisbon", "Oslo", "Nairobi", "Osaka", "Lima")
# The acceptance floor promote applies when the stack's args turn speculative decoding on: well below what a
# matching MTP head accepts (most drafts), well above a mismatched one (almost none).
DEFAULT_MIN_ACCEPTANCE = 0.3
# promote's agreement check: fixed prompts with one short, deterministic answer each, asked at temperature 0 of
# the candidate and of the revision serving now; 4 of 5 must match exactly (greedy decoding is deterministic,
# but batch composition can flip a near-tie token, so one difference is tolerated).
AGREEMENT_PROMPTS = (
    "Name the capital of France in one word.",
    "Count from 1 to 5, separated by commas.",
    "Spell the word 'cat' backwards.",
    "What colour is a clear daytime sky? Answer in one word.",
    "Write the number seven in digits.",
)
DEFAULT_MIN_AGREEMENT = 0.8
# Room left below max_model_len for the chat template, the question and the answer.
NEEDLE_ROOM_TOKENS = 128
# The needle's haystack: ordinary words in a seeded order (health stays free of verify.bench: see test_cli).
HAY_WORDS = (
    "river", "morning", "table", "garden", "letter", "window", "market", "story", "island", "forest",
    "paper", "music", "winter", "summer", "evening", "mountain", "country", "answer", "question", "number",
)  # fmt: skip


def _hay(words: int, draw: random.Random) -> list[str]:
    return [draw.choice(HAY_WORDS) for _ in range(words)]


async def _count_tokens(client: httpx.AsyncClient, model: str, text: str) -> int | None:
    """The server's own token count for ``text`` as a chat message (``POST /tokenize``); None without one."""
    try:
        response = await client.post(
            "/tokenize", json={"model": model, "messages": [{"role": "user", "content": text}]}
        )
        count = response.json().get("count") if response.status_code == httpx.codes.OK else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return count if isinstance(count, int) else None


class QualityOptions(pydantic.BaseModel):
    """Which quality checks run: the three always-on ones, plus those the serving configuration promises."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    expect_tool_calls: bool = False
    expect_reasoning: bool = False
    needle_tokens: int | None = pydantic.Field(default=None, ge=64)
    # Speculative decoding (MTP) is on: its draft acceptance rate must be at least this (None: not checked).
    min_acceptance: float | None = pydantic.Field(default=None, gt=0, le=1)
    # promote: the share of fixed prompts the candidate must answer exactly as the serving revision does.
    min_agreement: float | None = pydantic.Field(default=None, gt=0, le=1)
    seed: int = QUALITY_SEED


class QualityResult(pydantic.BaseModel):
    """One check: passed or not, what was expected, and what the endpoint actually answered."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    passed: bool
    expected: str
    saw: str
    duration_s: float


@dataclass(frozen=True, slots=True)
class _Asked:
    message: ChatMessage | None
    problem: str | None  # why there is no message (status, body, transport)


async def _ask(client: httpx.AsyncClient, payload: Mapping[str, object]) -> _Asked:
    try:
        response = await client.post(streaming.CHAT_PATH, json=dict(payload))
    except httpx.HTTPError as exc:
        return _Asked(None, f"no answer: {type(exc).__name__}: {exc}")
    if response.status_code != httpx.codes.OK:
        return _Asked(None, f"HTTP {response.status_code}: {body_excerpt(response.text)}")
    try:
        completion = ChatCompletion.model_validate_json(response.content)
    except pydantic.ValidationError:
        return _Asked(None, f"not a chat completion: {body_excerpt(response.text)}")
    if not completion.choices:
        return _Asked(None, "a chat completion without choices")
    return _Asked(completion.choices[0].message, None)


def _chat(model: str, prompt: str, *, max_tokens: int = ANSWER_TOKENS, **extra: object) -> dict[str, object]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        **extra,
    }


def _shown(text: str | None) -> str:
    return repr(body_excerpt(text or ""))


def _plain(text: str | None) -> str:
    """An answer without surrounding space, a trailing full stop or Markdown code fences."""
    stripped = (text or "").strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    return stripped.rstrip(".").strip()


Check = Callable[[httpx.AsyncClient, str], Awaitable[tuple[bool, str, str]]]


def _arithmetic(draw: random.Random) -> Check:
    a, b = draw.randint(100, 999), draw.randint(100, 999)

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        expected = str(a + b)
        asked = await _ask(client, _chat(model, f"What is {a} + {b}? Reply with the number only."))
        if asked.message is None:
            return False, expected, asked.problem or ""
        return _plain(asked.message.content) == expected, expected, _shown(asked.message.content)

    return check


def _json_format(draw: random.Random) -> Check:
    wanted = {"check": "format", "id": draw.randint(1000, 9999), "ok": True}
    text = json.dumps(wanted)

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        asked = await _ask(client, _chat(model, f"Reply with exactly this JSON object and nothing else: {text}"))
        if asked.message is None:
            return False, text, asked.problem or ""
        try:
            parsed = json.loads(_plain(asked.message.content))
        except ValueError:
            return False, text, f"not JSON: {_shown(asked.message.content)}"
        return parsed == wanted, text, _shown(asked.message.content)

    return check


def schema_problems(arguments: object, city: str) -> list[str]:
    """Why ``arguments`` do not match ``TOOL_SCHEMA`` for ``city`` (empty when they do)."""
    if not isinstance(arguments, dict):
        return [f"arguments are {type(arguments).__name__}, not an object"]
    problems = [f"missing required {key!r}" for key in ("city", "unit") if key not in arguments]
    if "city" in arguments and not isinstance(arguments["city"], str):
        problems.append(f"city is {type(arguments['city']).__name__}, not a string")
    elif isinstance(arguments.get("city"), str) and city.lower() not in str(arguments["city"]).lower():
        problems.append(f"city {arguments['city']!r}, not {city!r}")
    if "unit" in arguments and arguments["unit"] not in ("celsius", "fahrenheit"):
        problems.append(f"unit {arguments['unit']!r} is not one of celsius, fahrenheit")
    extra = sorted(set(arguments) - {"city", "unit"})
    problems += [f"undeclared argument {key!r}" for key in extra]
    return problems


def _tool_call(draw: random.Random) -> Check:
    city = draw.choice(CITIES)
    tool = {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": "Current weather", "parameters": TOOL_SCHEMA},
    }
    expected = f"a {TOOL_NAME} call whose arguments parse and match its schema, city {city}"

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        prompt = f"What is the weather in {city}, in celsius? Use the {TOOL_NAME} tool."
        asked = await _ask(client, _chat(model, prompt, max_tokens=256, tools=[tool], tool_choice="auto"))
        if asked.message is None:
            return False, expected, asked.problem or ""
        calls = asked.message.tool_calls or []
        if not calls:
            return False, expected, f"no tool call; content {_shown(asked.message.content)}"
        function = calls[0].get("function")
        if not isinstance(function, dict):
            return False, expected, f"a tool call without a function: {_shown(json.dumps(calls[0]))}"
        if function.get("name") != TOOL_NAME:
            return False, expected, f"called {function.get('name')!r}, not {TOOL_NAME!r}"
        raw = function.get("arguments")
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return False, expected, f"arguments that do not parse as JSON: {_shown(str(raw))}"
        problems = schema_problems(arguments, city)
        saw = f"{TOOL_NAME}({json.dumps(arguments)})"
        return not problems, expected, saw + (f": {'; '.join(problems)}" if problems else "")

    return check


def _reasoning() -> Check:
    expected = "a reasoning part apart from the final answer (reasoning/reasoning_content), both non-empty"

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        asked = await _ask(client, _chat(model, "What is 6 x 7? Think it through, then answer.", max_tokens=512))
        if asked.message is None:
            return False, expected, asked.problem or ""
        reasoning, content = asked.message.reasoning_text, asked.message.content or ""
        saw = f"reasoning {len(reasoning)} chars, content {len(content)} chars"
        return bool(reasoning.strip()) and bool(content.strip()), expected, saw

    return check


def _needle(draw: random.Random, tokens: int) -> Check:
    code = f"{draw.choice('KQXZ')}{draw.randint(10, 99)}-{draw.randint(1000, 9999)}"
    question = "What is the secret code stated in the text above? Reply with the code only."
    expected = f"{code}, hidden in the middle of about {tokens} tokens"

    hay = random.Random(draw.random())  # noqa: S311 - filler text

    async def haystack(client: httpx.AsyncClient, model: str) -> str:
        words = max(16, tokens // 2)
        sample = " ".join(_hay(words, random.Random(0)))  # noqa: S311 - filler text
        measured = await _count_tokens(client, model, sample)
        if measured:
            words = max(16, int(words * (tokens - NEEDLE_ROOM_TOKENS) / measured))
        filler = _hay(words, hay)
        middle = len(filler) // 2
        return " ".join([*filler[:middle], f"The secret code is {code}.", *filler[middle:]])

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        text = await haystack(client, model)
        asked = await _ask(client, _chat(model, f"{text}\n\n{question}", max_tokens=32))
        if asked.message is None:
            return False, expected, asked.problem or ""
        return code in (asked.message.content or ""), expected, _shown(asked.message.content)

    return check


def promised_by(vllm_args: Sequence[str], max_model_len: int | None, asked: QualityOptions) -> QualityOptions:
    """The checks a stack's own ``vllm serve`` arguments promise, on top of those asked for: a tool-call parser
    promises tool calls, a reasoning parser the split, a speculative config an acceptance rate above the
    floor, and ``max_model_len`` a needle at that length; a candidate also agrees with the serving revision."""
    args = set(vllm_args)
    needle = asked.needle_tokens
    if needle is None and max_model_len is not None and max_model_len > NEEDLE_ROOM_TOKENS + 64:
        needle = max_model_len - NEEDLE_ROOM_TOKENS
    return asked.model_copy(
        update={
            "expect_tool_calls": asked.expect_tool_calls or "--tool-call-parser" in args,
            "expect_reasoning": asked.expect_reasoning or "--reasoning-parser" in args,
            "needle_tokens": needle,
            "min_acceptance": asked.min_acceptance
            if asked.min_acceptance is not None or "--speculative-config" not in args
            else DEFAULT_MIN_ACCEPTANCE,
            "min_agreement": asked.min_agreement if asked.min_agreement is not None else DEFAULT_MIN_AGREEMENT,
        }
    )


def _acceptance(floor: float) -> Check:
    expected = f"a speculative-decoding draft acceptance rate of at least {floor:.0%} (vLLM's /metrics)"

    async def check(client: httpx.AsyncClient, model: str) -> tuple[bool, str, str]:
        try:
            response = await client.get("/metrics")
            metrics = parse_metrics(response.text, model=model) if response.status_code == httpx.codes.OK else None
        except (httpx.HTTPError, MetricsParseError) as exc:
            return False, expected, f"no metrics: {exc}"
        if metrics is None:
            return False, expected, f"/metrics answered {response.status_code}"
        rate = metrics.spec_decode_acceptance_rate
        if rate is None:
            return False, expected, "no vllm:spec_decode_* counters: speculative decoding is not on"
        accepted, drafted = metrics.spec_decode_accepted_tokens, metrics.spec_decode_draft_tokens
        return rate >= floor, expected, f"acceptance {rate:.1%} ({accepted:g} of {drafted:g} draft tokens)"

    return check


async def run_quality(
    client: httpx.AsyncClient,
    model: str,
    options: QualityOptions,
    *,
    clock: Clock = time.perf_counter,
) -> list[QualityResult]:
    """Every check ``options`` asks for, in order; each result says what it expected and what it saw."""
    draw = random.Random(options.seed)  # noqa: S311 - test questions, not secrets
    checks: list[tuple[str, Check]] = [("arithmetic", _arithmetic(draw)), ("json-format", _json_format(draw))]
    if options.expect_tool_calls:
        checks.append(("tool-call", _tool_call(draw)))
    if options.expect_reasoning:
        checks.append(("reasoning-split", _reasoning()))
    if options.needle_tokens is not None:
        checks.append(("needle", _needle(draw, options.needle_tokens)))
    if options.min_acceptance is not None:
        checks.append(("spec-acceptance", _acceptance(options.min_acceptance)))
    results = []
    for name, check in checks:
        started = clock()
        passed, expected, saw = await check(client, model)
        results.append(
            QualityResult(name=name, passed=passed, expected=expected, saw=saw, duration_s=clock() - started)
        )
    return results


async def agreement(
    candidate: httpx.AsyncClient,
    serving: httpx.AsyncClient,
    model: str,
    floor: float,
    *,
    clock: Clock = time.perf_counter,
) -> QualityResult:
    """The candidate's answers to ``AGREEMENT_PROMPTS`` against the serving revision's, at temperature 0: passes
    when at least ``floor`` of them are identical (and every one was answered by both)."""
    started = clock()
    same = 0
    differences: list[str] = []
    for prompt in AGREEMENT_PROMPTS:
        ours = await _ask(candidate, _chat(model, prompt, max_tokens=32))
        theirs = await _ask(serving, _chat(model, prompt, max_tokens=32))
        if ours.message is None or theirs.message is None:
            differences.append(
                f"{prompt!r}: {ours.problem or theirs.problem} ({'candidate' if ours.problem else 'serving'})"
            )
            continue
        if (ours.message.content or "") == (theirs.message.content or ""):
            same += 1
        else:
            differences.append(
                f"{prompt!r}: candidate {_shown(ours.message.content)}, serving {_shown(theirs.message.content)}"
            )
    needed = math.ceil(floor * len(AGREEMENT_PROMPTS))
    saw = f"{same} of {len(AGREEMENT_PROMPTS)} identical" + (f"; {differences[0]}" if differences else "")
    return QualityResult(
        name="agreement",
        passed=same >= needed,
        expected=f"at least {needed} of {len(AGREEMENT_PROMPTS)} fixed prompts answered as the serving revision does",
        saw=saw,
        duration_s=clock() - started,
    )
