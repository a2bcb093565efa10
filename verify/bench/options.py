"""What a bench command is asked to do, as typed values.

Why typed options rather than parsed flags: ``verify bench``, the load-generator job's ``bench task``,
``bench collect``, ``compare`` and ``verify promote``'s bench gate all run the same functions
(verify/bench/command.py, cloud_command.py, compare_command.py, matrix_command.py); only
verify/bench/cli.py knows flags, and maps them onto these. Defaults here are the flags' defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from verify.bench.arrivals import DEFAULT_SEED, ArrivalKind
from verify.bench.load_generator import TransportKind
from verify.bench.max_rate import SearchRule
from verify.bench.scenarios import ScenarioOptions
from verify.bench.slo import Slo
from verify.endpoint import TimeoutOptions
from verify.streaming import Api

DEFAULT_CONCURRENCY = (1, 8, 32)
DEFAULT_CONTEXT = (128, 1024)
DEFAULT_MAX_TOKENS = 128


@dataclass(frozen=True, slots=True)
class Workload:
    """The sweep: which cells (context x concurrency) and what every request asks for."""

    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    context: tuple[int, ...] = DEFAULT_CONTEXT
    max_tokens: int = DEFAULT_MAX_TOKENS
    requests: int | None = None  # measured per cell; None: max(4 x concurrency, 32)
    warmup: int | None = None  # unmeasured per cell; None: min(concurrency, 8)
    api: Api = Api.CHAT
    ignore_eos: bool = True
    # Open loop (verify.bench.open_loop): one cell per context x rate, ``concurrency`` then holding the one
    # in-flight cap; empty: closed loop.
    request_rates: tuple[float, ...] = ()
    arrival: ArrivalKind = ArrivalKind.POISSON
    burstiness: float = 1.0
    seed: int = DEFAULT_SEED
    # The prompts' shape (verify.bench.scenarios): unique (default), shared prefixes, or multi-turn chats.
    scenario: ScenarioOptions = field(default_factory=ScenarioOptions)


@dataclass(frozen=True, slots=True)
class Gate:
    """What every cell must meet: ``slos`` (the default success_rate gate added unless one names it), and
    whether cells measured by a saturated load generator may pass."""

    slos: tuple[Slo, ...] = ()
    allow_untrusted: bool = False


@dataclass(frozen=True, slots=True)
class ServingFacts:
    """What serves the endpoint, for cost and the physical ceiling; None: the stack's, or the model name's."""

    accelerator: str | None = None
    accelerator_count: int = 1
    price_per_hour: float | None = None
    model_params: float | None = None
    # Draft tokens a step the server's speculative decoding adds (0: none); None: the stack's, else the server's
    # counters (verify/bench/ceilings.py allows speculation only where a record shows it).
    speculative_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class BenchOptions:
    """One ``verify bench`` run against a resolved target; ``output`` is the JSON-lines results file."""

    output: Path
    workload: Workload = field(default_factory=Workload)
    timeouts: TimeoutOptions = field(default_factory=TimeoutOptions)
    api_key_env: str | None = None
    transport: TransportKind = TransportKind.AIOHTTP
    workers: int | None = None  # load-generator processes; None: one per USERS_PER_WORKER users
    resume: bool = False
    progress: bool = True
    allow_skipped: bool = False
    gate: Gate = field(default_factory=Gate)
    facts: ServingFacts = field(default_factory=ServingFacts)
    # --find-max-rate: search the highest open-loop rate meeting the SLO (verify.bench.max_rate) instead of
    # measuring the workload's cells.
    max_rate: SearchRule | None = None
