"""Workloads shaped like production, generated offline: what each one stresses (``verify bench --scenario``).

- ``random`` (the default): every prompt unique from its first token (verify/bench/prompts.py), so nothing
  is served from the prefix cache: the server's cost for cold prompts of exactly ``--context`` tokens.
- ``shared-prefix``: ``--shared-prefixes N`` system prompts of ``--prefix-tokens`` tokens, request i
  starting with prompt i mod N, then a unique question: what an assistant with a few fixed system prompts
  (or few-shot templates) sends. It stresses the prefix cache: the shared blocks are computed once and then
  hit, so TTFT falls and throughput rises with the hit rate; each cell records the hit rate the server
  itself counted over the cell (``/metrics``: ``vllm:prefix_cache_hits_total`` over ``..._queries_total``).
- ``multi-turn``: chats of ``--turns K`` turns, each turn sending the whole conversation so far (every
  earlier question and the server's real answer) plus a new question of ``--context`` tokens: the prompt
  grows turn by turn and its history is a prefix the cache may hold. It stresses long prompts, KV-cache
  capacity and prefix reuse across requests of one user. Chat API only; a user runs its chat's turns one
  after another (closed loop), so ``--concurrency`` is concurrent chats.

- ``lengths``: prompt and output lengths drawn per request from a seeded log-normal distribution (median
  half of ``--context`` / ``--max-tokens``, which are the ceilings; ``LENGTH_BUCKETS`` calibrated prompt
  lengths): what a chat service sees, where short and long requests share batches. It stresses the
  scheduler's mixing of prefills and decodes and exposes head-of-line blocking that equal-length requests
  hide; the cell's ``actual_context`` is then the mean of the mix.

- ``needle``: each prompt of ``--context`` tokens hides one sentence, "The passcode is NNNNNN.", at a depth
  spread over the prompt (request i at the golden-ratio sequence's i-th point, so every depth from the first
  words to the last is visited), then asks for it. It stresses long-context retrieval at each context of the
  sweep and under the cell's load: the cell records ``needle_recall``, the share of completed answers that
  hold their own prompt's passcode and no other of the cell's. The passcodes are distinct six-digit numbers
  drawn per run, and each answer is judged against its own prompt's (``Sample.index``): a server answering
  every prompt with the previous prompt's passcode (a cache keyed wrongly, a router mixing up streams)
  recalls nothing, and one listing every passcode it has seen recalls nothing either. A pass/fail needle at
  the stack's longest context is the quality gate's (verify/health/quality.py); this one measures recall
  across the sweep.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import httpx

from verify.bench.prompts import PromptShape, TokenCounter, calibrate, unique_prefix
from verify.bench.samples import PhaseShare, Sample
from verify.bench.stall import StallMonitor
from verify.streaming import Clock, StreamRequest, StreamResult, measure_stream

DEFAULT_SHARED_PREFIXES = 4
DEFAULT_PREFIX_TOKENS = 256
DEFAULT_TURNS = 3
# The letters that make each shared prefix different from the others (and from every unique prompt).
PREFIX_TAG = "sys"


class Scenario(enum.StrEnum):
    RANDOM = "random"
    SHARED_PREFIX = "shared-prefix"
    MULTI_TURN = "multi-turn"
    LENGTHS = "lengths"
    NEEDLE = "needle"


# ``lengths``: how many distinct prompt lengths are calibrated, the distribution's spread (sigma of the log)
# and its seed; the shortest allowed is a quarter of the ceiling.
LENGTH_BUCKETS = 4
LENGTH_SIGMA = 0.6
LENGTH_SEED = 40
SHORTEST_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class ScenarioOptions:
    kind: Scenario = Scenario.RANDOM
    shared_prefixes: int = DEFAULT_SHARED_PREFIXES
    prefix_tokens: int = DEFAULT_PREFIX_TOKENS
    turns: int = DEFAULT_TURNS

    def describe(self) -> str | None:
        """What the results record as the cell's ``scenario`` (None: the default, unique prompts)."""
        if self.kind is Scenario.SHARED_PREFIX:
            return f"shared-prefix ({self.shared_prefixes} prefixes x {self.prefix_tokens} tokens)"
        if self.kind is Scenario.MULTI_TURN:
            return f"multi-turn ({self.turns} turns)"
        if self.kind is Scenario.LENGTHS:
            return f"lengths (log-normal, sigma {LENGTH_SIGMA:g}, ceilings --context and --max-tokens)"
        if self.kind is Scenario.NEEDLE:
            return "needle (a six-digit passcode at a spread depth, asked for at the end)"
        return None


async def shared_prefixes(counter: TokenCounter, options: ScenarioOptions, *, nonce: str) -> list[str]:
    """``options.shared_prefixes`` texts of about ``options.prefix_tokens`` tokens, each different from the
    first token (so one prefix is never a hit for another), the same in every request that uses it."""
    shape: PromptShape = await calibrate(counter, options.prefix_tokens, nonce=f"{nonce}{PREFIX_TAG}")
    return [shape.prompt(unique_prefix(f"{nonce}{PREFIX_TAG}", index)) for index in range(options.shared_prefixes)]


# ``needle``: the shortest context that leaves a haystack worth the name around the passcode and question.
NEEDLE_MIN_CONTEXT = 256
NEEDLE_QUESTION = "What is the passcode? Answer with the number only."
_NEEDLE = re.compile(r"The passcode is (\d{6})\.")
_GOLDEN = (math.sqrt(5) - 1) / 2


def needle_codes(count: int, *, seed: str) -> list[str]:
    """``count`` distinct six-digit passcodes, the same for the same ``seed`` (the run's nonce)."""
    # Seeded on purpose: a resumed or repeated run hides the same passcodes (not secrets, test data).
    return [str(code) for code in random.Random(seed).sample(range(100_000, 1_000_000), count)]  # noqa: S311 - seeded test data


async def needle_overhead(counter: TokenCounter, *, nonce: str) -> int:
    """The tokens the hidden sentence and the question add to a prompt, counted by the server, so the haystack
    is calibrated short by that much and the whole prompt is ``--context`` tokens."""
    bare = unique_prefix(nonce, 0)
    with_both = f"{bare} The passcode is 123456.\n\n{NEEDLE_QUESTION}"
    return max(await counter.count(with_both) - await counter.count(bare), 0)


def with_needles(prompts: Sequence[str], codes: Sequence[str], *, keep_words: int) -> list[str]:
    """Prompt i with "The passcode is <code i>." at depth (i x 0.618...) mod 1 of its words, never before its
    first ``keep_words`` (the unique prefix that keeps prompts apart in the prefix cache), then the question."""
    hidden = []
    for index, (prompt, code) in enumerate(zip(prompts, codes, strict=True)):
        words = prompt.split(" ")
        depth = (index * _GOLDEN) % 1.0
        at = keep_words + round(depth * (len(words) - keep_words))
        haystack = " ".join([*words[:at], f"The passcode is {code}.", *words[at:]])
        hidden.append(f"{haystack}\n\n{NEEDLE_QUESTION}")
    return hidden


def hidden_codes(requests: Sequence[StreamRequest]) -> list[str | None]:
    """The passcode hidden in each of ``requests``' prompts, in their order (None: a prompt without one)."""
    return [match.group(1) if (match := _NEEDLE.search(request.prompt)) else None for request in requests]


def needle_recall(samples: Sequence[Sample], codes: Sequence[str | None]) -> float | None:
    """The share of completed answers holding their own prompt's passcode (``codes[sample.index]``) and no
    other of ``codes``; None when none completed. An answer whose prompt is not known counts as not found."""
    answered = [sample for sample in samples if sample.result.ok]
    if not answered:
        return None
    hidden = frozenset(code for code in codes if code is not None)

    def recalled(sample: Sample) -> bool:
        own = codes[sample.index] if sample.index is not None and 0 <= sample.index < len(codes) else None
        if own is None or own not in sample.result.text:
            return False
        return not any(code in sample.result.text for code in hidden - {own})

    return sum(1 for sample in answered if recalled(sample)) / len(answered)


def with_prefixes(prompts: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    """Prompt i behind prefix i mod N: the shared part first (what the cache can reuse), the unique part after."""
    return [f"{prefixes[index % len(prefixes)]}\n\n{prompt}" for index, prompt in enumerate(prompts)]


def chats(requests: Sequence[StreamRequest], turns: int) -> list[list[StreamRequest]]:
    """Consecutive requests grouped into chats of ``turns`` turns (the last one may be shorter)."""
    return [list(requests[start : start + turns]) for start in range(0, len(requests), turns)]


async def measure_chats(
    client: httpx.AsyncClient,
    conversations: Sequence[Sequence[StreamRequest]],
    users: int,
    *,
    timeouts: httpx.Timeout | None = None,
    deadline_s: float | None = None,
    clock: Clock = time.perf_counter,
    on_result: Callable[[StreamResult], None] | None = None,
) -> PhaseShare:
    """``users`` users each run one chat at a time, turn after turn, every turn carrying the conversation so
    far (the earlier questions and the server's actual answers). A failed turn ends its chat: the next turn
    would carry an answer that never came."""
    # Each turn's index in the requests the chats were cut from (chats are consecutive runs of them).
    firsts = list(itertools.accumulate((len(chat) for chat in conversations[:-1]), initial=0))
    pending = iter(zip(firsts, conversations, strict=True))
    samples: list[Sample] = []

    async def user() -> None:
        for first, conversation in pending:
            history: tuple[tuple[str, str], ...] = ()
            carried = 0  # the tokens the history adds: the previous turn's whole prompt and its answer
            for number, turn in enumerate(conversation):
                own = turn.expected_prompt_tokens
                request = replace(turn, history=history, expected_prompt_tokens=None if own is None else own + carried)
                sent_at = clock()
                result = await measure_stream(client, request, timeouts=timeouts, deadline_s=deadline_s, clock=clock)
                samples.append(Sample(sent_at, result, first + number))
                if on_result is not None:
                    on_result(result)
                if not result.ok:
                    break
                history = (*history, ("user", turn.prompt), ("assistant", result.text))
                carried = (result.prompt_tokens or 0) + (result.output_tokens or 0)

    async with StallMonitor() as monitor:
        started = clock()
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(users, len(conversations))):
                    group.create_task(user())
        finally:
            finished = clock()
    samples.sort(key=lambda sample: sample.sent_at)
    return PhaseShare(started, finished, tuple(samples), monitor.summary(), users)


def drawn_lengths(ceiling: int, count: int, *, seed: int = LENGTH_SEED) -> list[int]:
    """``count`` lengths from a log-normal with median ``ceiling / 2``, clipped to [ceiling / 4, ceiling]."""
    draw = random.Random(seed)  # noqa: S311 - a workload, not a secret
    low = max(1, int(ceiling * SHORTEST_SHARE))
    return [
        min(ceiling, max(low, round(draw.lognormvariate(math.log(ceiling / 2), LENGTH_SIGMA)))) for _ in range(count)
    ]


def prompt_buckets(ceiling: int) -> list[int]:
    """The prompt lengths calibrated for ``lengths`` (each request takes the nearest one at or below its draw)."""
    low = max(1, int(ceiling * SHORTEST_SHARE))
    step = (ceiling - low) / max(1, LENGTH_BUCKETS - 1)
    return sorted({round(low + index * step) for index in range(LENGTH_BUCKETS)})


def bucket_of(length: int, buckets: Sequence[int]) -> int:
    return max((bucket for bucket in buckets if bucket <= length), default=buckets[0])
