"""The largest workload one `bench` run takes: beyond it, a usage error (exit 2) naming the flag, before any request.

Why bounds at all: every flag was checked for being a positive number and nothing else, so a typo ran as asked.
`--request-rate 0.000001` scheduled 100 requests over three years and waited; `--concurrency 10000000` built
forty million prompts and hung; `--context 500000000` built one prompt until MemoryError. Each bound is stated
here with why it is where it is, and the message names the flag, the value and the bound:

- ``--context`` and ``--max-tokens``: at most the longest context of any model in the catalog (Gemma 4's
  ``max_position_embeddings``, serving/catalog/): no server of these models takes a longer prompt or output.
- ``--concurrency`` and ``--max-in-flight``: at most ``MAX_CONCURRENCY`` requests in flight. Each is an open
  socket (a file descriptor) and a task of the client; a vLLM replica runs at most ``--max-num-seqs`` at once
  (256 by default, vLLM 0.32) and a Cloud Run instance admits at most 1000, so more users than this measure the
  client's and the front end's queues, not a server.
- ``--requests`` and ``--warmup``: at most ``MAX_REQUESTS_PER_CELL`` each, and a cell's prompts (built before it
  runs, each its own text) at most ``MAX_PROMPT_TOKENS_PER_CELL`` tokens in all (about 5 bytes of text a token:
  a gigabyte of prompts), whatever the mix of requests and context that reaches it.
- ``--request-rate`` (and ``--rate-start``/``--rate-max``): at most ``MAX_REQUEST_RATE`` requests a second
  (one process sends an open loop, verify/bench/open_loop.py, and one process sends a few thousand a second at
  best: a higher rate measures the client), and a cell's schedule (its requests over its rate) at most
  ``MAX_SCHEDULE_S`` long.
- ``--shared-prefixes`` at most ``MAX_SHARED_PREFIXES``, ``--max-probes`` at most ``MAX_PROBES``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from serving.catalog import catalog
from verify import UsageError
from verify.bench.max_rate import SearchRule
from verify.bench.options import Workload
from verify.bench.scenarios import Scenario
from verify.bench.sweep import MAX_DEFAULT_WARMUPS, MIN_REQUESTS_PER_CELL, OPEN_LOOP_REQUESTS, REQUESTS_PER_USER
from verify.numbers import readable

MAX_CONCURRENCY = 10_000
MAX_REQUESTS_PER_CELL = 100_000
MAX_PROMPT_TOKENS_PER_CELL = 250_000_000
MAX_REQUEST_RATE = 10_000.0
MAX_SCHEDULE_S = 24 * 3600.0
MAX_SHARED_PREFIXES = 10_000
MAX_PROBES = 100


@functools.cache
def max_context_tokens() -> int:
    """The longest context any catalog model takes (its ``max_position_embeddings``)."""
    return max(model.architecture.max_position_embeddings or 0 for model in catalog().values())


def _over(flag: str, values: Iterable[float], bound: float, why: str) -> list[str]:
    above = [value for value in values if value > bound]
    if not above:
        return []
    shown = ",".join(str(value) if isinstance(value, int) else f"{value:g}" for value in above)
    return [f"{flag} {shown} is above the most one run takes, {readable(bound)} ({why})"]


def workload_problems(workload: Workload, rule: SearchRule | None = None) -> list[str]:
    """Why ``workload`` (and the ``--find-max-rate`` search ``rule``) is beyond the bounds; empty when it is not."""
    longest = max_context_tokens()
    open_loop = bool(workload.request_rates) or rule is not None
    users_flag = "--max-in-flight" if open_loop else "--concurrency"
    problems = [
        *_over("--context", workload.context, longest, "the longest context of any catalog model"),
        *_over("--max-tokens", [workload.max_tokens], longest, "the longest context of any catalog model"),
        *_over(users_flag, workload.concurrency, MAX_CONCURRENCY, "requests in flight one client holds open"),
        *_over("--requests", [workload.requests or 0], MAX_REQUESTS_PER_CELL, "measured requests per cell"),
        *_over("--warmup", [workload.warmup or 0], MAX_REQUESTS_PER_CELL, "warm-up requests per cell"),
    ]
    if rule is None:  # a search's plan holds its --rate-start as its rate: judged as that flag below
        problems += _over("--request-rate", workload.request_rates, MAX_REQUEST_RATE, "requests/s one process sends")
    if workload.scenario.kind is Scenario.SHARED_PREFIX:
        problems += _over(
            "--shared-prefixes", [workload.scenario.shared_prefixes], MAX_SHARED_PREFIXES, "system prompts"
        )
    if rule is not None:
        problems += _over("--rate-start", [rule.start], MAX_REQUEST_RATE, "requests/s one process sends")
        problems += _over("--rate-max", [rule.ceiling], MAX_REQUEST_RATE, "requests/s one process sends")
        problems += _over("--max-probes", [rule.max_probes], MAX_PROBES, "cells one search measures")
    if problems:
        return problems  # the products below would only repeat a value already out of bounds
    return _prompt_volume(workload) + _schedule_lengths(workload, rule)


def _requests_for(workload: Workload, users: int, open_loop: bool) -> int:
    """A cell's measured requests as the sweep counts them (verify/bench/sweep.py, ``SweepPlan.requests_for``)."""
    if workload.requests is not None:
        return workload.requests
    return OPEN_LOOP_REQUESTS if open_loop else max(REQUESTS_PER_USER * users, MIN_REQUESTS_PER_CELL)


def _prompt_volume(workload: Workload) -> list[str]:
    open_loop = bool(workload.request_rates)
    users = max(workload.concurrency)
    requests = _requests_for(workload, users, open_loop) + (
        workload.warmup if workload.warmup is not None else min(users, MAX_DEFAULT_WARMUPS)
    )
    tokens = requests * max(workload.context)
    if tokens <= MAX_PROMPT_TOKENS_PER_CELL:
        return []
    knobs = "--requests or --context" if open_loop else "--requests, --context or --concurrency"
    return [
        (
            f"a cell of {readable(requests)} requests of {readable(max(workload.context))} prompt tokens builds "
            f"{readable(tokens)} prompt tokens before it runs, above the most one run takes, "
            f"{readable(MAX_PROMPT_TOKENS_PER_CELL)} (about 5 bytes of memory each); lower {knobs}"
        )
    ]


def _schedule_lengths(workload: Workload, rule: SearchRule | None) -> list[str]:
    rates = list(workload.request_rates) if rule is None else [rule.start]
    if not rates:
        return []
    requests = _requests_for(workload, max(workload.concurrency), open_loop=True)
    slowest = min(rates)
    span = requests / slowest
    if span <= MAX_SCHEDULE_S:
        return []
    flag = "--request-rate" if rule is None else "--rate-start"
    return [
        (
            f"{flag} {slowest:g}: {requests} requests at {slowest:g}/s take {readable(span)} s, above the longest "
            f"schedule one cell runs, {readable(MAX_SCHEDULE_S)} s (a day); raise {flag} or lower --requests"
        )
    ]


def check_workload(workload: Workload, rule: SearchRule | None = None) -> None:
    """Raise ``UsageError`` (exit 2) naming every flag beyond its bound."""
    problems = workload_problems(workload, rule)
    if problems:
        raise UsageError("; ".join(problems))
