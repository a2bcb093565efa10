"""`gemma-verify bench`, `bench task`, `bench collect` and `compare`: flags, rendering and exit codes.

The only module of verify/bench that knows flags: it maps them onto the typed options of
verify/bench/options.py, runs the commands as functions (command.py: ``run_bench``; cloud_command.py:
``run_on_cloud_run``, ``run_bench_task``, ``collect_run``; compare_command.py; matrix_command.py) and
renders their reports.

Exit codes of `bench`: 0 every cell measured and every ``--slo`` (and the default ``success_rate`` gate)
met; 1 an SLO was violated, or fewer cells were measured than asked (none at all, or some skipped without
``--allow-skipped``); 2 a usage error, an unusable ``--output``, or an endpoint that cannot be reached,
authorised, does not serve the model or stops answering mid-sweep (finished cells and their reports are
kept; rerun with ``--resume`` once it is back); 130 interrupted (likewise). `compare`: 0 compared; 2 a file
is missing, empty or holds a line verify could not have written, or the two files measured different
workloads (output tokens per request or API) and ``--allow-mismatch`` was not given.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

from rich.console import Console

from remote.text import escape_controls
from verify import UsageError
from verify.argtypes import positive_int, positive_int_list, positive_number, positive_number_list
from verify.bench.arrivals import DEFAULT_SEED, ArrivalKind
from verify.bench.bounds import check_workload
from verify.bench.cloud import DEFAULT_BARRIER_TIMEOUT_S
from verify.bench.cloud_command import (
    CollectOptions,
    CollectReport,
    TaskOptions,
    collect_run,
    run_bench_task,
    run_on_cloud_run,
)
from verify.bench.command import BenchReport, run_bench
from verify.bench.compare_command import CompareOptions, run_compare
from verify.bench.console import comparison_view, summary_table
from verify.bench.judgement import parse_params
from verify.bench.load_generator import TransportKind
from verify.bench.matrix import DEFAULT_ACTIVE_HOURS
from verify.bench.matrix_command import MatrixOptions, run_matrix
from verify.bench.max_rate import SearchRule
from verify.bench.open_loop import DEFAULT_MAX_IN_FLIGHT
from verify.bench.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONTEXT,
    DEFAULT_MAX_TOKENS,
    BenchOptions,
    Gate,
    ServingFacts,
    Workload,
)
from verify.bench.output_file import check_output
from verify.bench.scenarios import (
    DEFAULT_PREFIX_TOKENS,
    DEFAULT_SHARED_PREFIXES,
    DEFAULT_TURNS,
    NEEDLE_MIN_CONTEXT,
    Scenario,
    ScenarioOptions,
)
from verify.bench.slo import DEFAULT_SUCCESS_RATE, Slo, parse_slo
from verify.bench.workers import USERS_PER_WORKER
from verify.endpoint import resolve_target
from verify.endpoint.cli import add_target_arguments, add_timeout_arguments, target_options, timeout_options
from verify.streaming import Api
from verify.terminal import markup_safe

EXIT_OK = 0
# What to change when the job's own tasks were CPU-bound (said once under the cells).
JOB_ADVICE = "give the load-generator job more tasks or cpuPerTask (the stack's bench block)"


def slo_flag(value: str) -> Slo:
    """``--slo KEY=VALUE`` (verify bench, compare and promote), parsed so a typo fails before anything runs."""
    try:
        return parse_slo(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _params(value: str) -> float:
    try:
        return parse_params(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _hours(text: str) -> float:
    hours = positive_number("--active-hours", "hours")(text)
    if hours > 24:
        raise argparse.ArgumentTypeError(f"--active-hours is hours a day: at most 24, got {text!r}")
    return hours


def _list(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify bench`` and ``verify compare`` to the CLI."""
    _register_bench(subparsers)
    _register_compare(subparsers)
    _register_cloud(subparsers)


def add_workload_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The sweep's workload flags, shared by ``bench`` and the load-generator job's ``bench task``."""
    load = parser.add_argument_group("workload")
    load.add_argument(
        "--concurrency",
        type=positive_int_list("--concurrency"),
        default=DEFAULT_CONCURRENCY,
        metavar="LIST",
        help=f"users (requests in flight), comma-separated (default {_list(DEFAULT_CONCURRENCY)})",
    )
    load.add_argument(
        "--context",
        type=positive_int_list("--context"),
        default=DEFAULT_CONTEXT,
        metavar="LIST",
        help=f"prompt lengths in tokens as the server counts them, comma-separated (default {_list(DEFAULT_CONTEXT)})",
    )
    load.add_argument(
        "--max-tokens",
        type=positive_int("--max-tokens"),
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"output tokens per request, forced with ignore_eos and min_tokens (default {DEFAULT_MAX_TOKENS})",
    )
    load.add_argument(
        "--requests",
        type=positive_int("--requests"),
        metavar="N",
        help="measured requests per cell (default max(4 x concurrency, 32))",
    )
    load.add_argument(
        "--warmup",
        type=positive_int("--warmup", minimum=0),
        metavar="N",
        help="unmeasured warm-up requests per cell (default min(concurrency, 8))",
    )
    load.add_argument("--api", choices=[api.value for api in Api], default=Api.CHAT.value, help="default chat")
    load.add_argument(
        "--workload",
        type=Path,
        metavar="FILE",
        help="replay an advise workload file (verify/advise/workload.py): a cell per request kind at its prompt "
        "(system prompt and mean history included), the mean output, its users or rate; think time not replayed",
    )
    load.add_argument(
        "--ignore-eos",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="force exactly --max-tokens output tokens (vLLM's ignore_eos + min_tokens; default on)",
    )
    return load


def add_open_loop_arguments(parser: argparse.ArgumentParser) -> None:
    """``--request-rate`` and its schedule: open-loop cells (context x rate) instead of users."""
    group = parser.add_argument_group("open loop (arrival rates instead of users)")
    group.add_argument(
        "--request-rate",
        type=positive_number_list("--request-rate", "requests/s"),
        metavar="LIST",
        help="requests per second, comma-separated: each a cell per context, sent on schedule whatever the "
        "server does (a cell whose sends fall behind is untrusted); replaces --concurrency",
    )
    group.add_argument(
        "--arrival",
        choices=[kind.value for kind in ArrivalKind],
        default=ArrivalKind.POISSON.value,
        help="gaps between sends: poisson (default), constant, or gamma with --burstiness",
    )
    group.add_argument(
        "--burstiness",
        type=positive_number("--burstiness"),
        default=1.0,
        metavar="F",
        help="gamma arrivals' shape: 1 is Poisson, below 1 burstier, above 1 more regular (default 1)",
    )
    group.add_argument(
        "--seed",
        type=positive_int("--seed", minimum=0),
        default=DEFAULT_SEED,
        metavar="N",
        help=f"the schedule's random seed: the same seed sends the same bursts (default {DEFAULT_SEED})",
    )
    group.add_argument(
        "--max-in-flight",
        type=positive_int("--max-in-flight"),
        default=DEFAULT_MAX_IN_FLIGHT,
        metavar="N",
        help=f"requests in flight at most; a send that must wait for it is late (default {DEFAULT_MAX_IN_FLIGHT})",
    )


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """``--scenario`` and its sizes: the prompts' shape (verify/bench/scenarios.py says what each stresses)."""
    group = parser.add_argument_group("workload shape")
    group.add_argument(
        "--scenario",
        choices=[kind.value for kind in Scenario],
        default=Scenario.RANDOM.value,
        help="random: unique prompts, nothing from the prefix cache (default); shared-prefix: N system prompts "
        "reused; multi-turn: chats whose every turn carries the conversation so far; lengths: log-normal prompt "
        "and output lengths; needle: a passcode hidden in each prompt, recall recorded per cell",
    )
    group.add_argument(
        "--shared-prefixes",
        type=positive_int("--shared-prefixes"),
        default=DEFAULT_SHARED_PREFIXES,
        metavar="N",
        help=f"shared-prefix: how many system prompts (default {DEFAULT_SHARED_PREFIXES})",
    )
    group.add_argument(
        "--prefix-tokens",
        type=positive_int("--prefix-tokens"),
        default=DEFAULT_PREFIX_TOKENS,
        metavar="N",
        help=f"shared-prefix: tokens of each system prompt, part of --context (default {DEFAULT_PREFIX_TOKENS})",
    )
    group.add_argument(
        "--turns",
        type=positive_int("--turns", minimum=2),
        default=DEFAULT_TURNS,
        metavar="N",
        help=f"multi-turn: turns per chat, each a new question of --context tokens (default {DEFAULT_TURNS})",
    )


def add_max_rate_arguments(parser: argparse.ArgumentParser) -> None:
    """``--find-max-rate`` and its stopping rule (verify/bench/max_rate.py)."""
    group = parser.add_argument_group("the highest rate meeting the SLO")
    group.add_argument(
        "--find-max-rate",
        action="store_true",
        help="bracket and bisect the open-loop request rate for the highest one meeting every --slo (one "
        "--context; each probe a cell in --output); exit 1 when no rate meets it",
    )
    rule = SearchRule()
    group.add_argument(
        "--rate-start", type=positive_number("--rate-start", "requests/s"), default=rule.start, metavar="R"
    )
    group.add_argument(
        "--rate-max", type=positive_number("--rate-max", "requests/s"), default=rule.ceiling, metavar="R"
    )
    group.add_argument(
        "--rate-tolerance",
        type=positive_number("--rate-tolerance"),
        default=rule.tolerance,
        metavar="F",
        help=f"stop when the bracket is this close (default {rule.tolerance:g} = {rule.tolerance * 100:g}%%)",
    )
    group.add_argument(
        "--max-probes", type=positive_int("--max-probes", minimum=2), default=rule.max_probes, metavar="N"
    )


def _scenario(args: argparse.Namespace) -> ScenarioOptions:
    kind = Scenario(getattr(args, "scenario", Scenario.RANDOM.value))
    options = ScenarioOptions(
        kind=kind,
        shared_prefixes=getattr(args, "shared_prefixes", DEFAULT_SHARED_PREFIXES),
        prefix_tokens=getattr(args, "prefix_tokens", DEFAULT_PREFIX_TOKENS),
        turns=getattr(args, "turns", DEFAULT_TURNS),
    )
    if kind is Scenario.MULTI_TURN and (args.api != Api.CHAT.value or getattr(args, "request_rate", None)):
        raise UsageError("--scenario multi-turn needs --api chat and a closed loop (--concurrency, no --request-rate)")
    if kind is Scenario.NEEDLE and any(context < NEEDLE_MIN_CONTEXT for context in args.context):
        raise UsageError(
            f"--scenario needle: every --context must be at least {NEEDLE_MIN_CONTEXT} tokens (a haystack around "
            "the hidden passcode), got " + ",".join(str(context) for context in args.context)
        )
    if kind is Scenario.SHARED_PREFIX and any(context <= options.prefix_tokens for context in args.context):
        raise UsageError(
            f"--scenario shared-prefix: every --context must be longer than --prefix-tokens {options.prefix_tokens} "
            "(the shared part is part of the prompt)"
        )
    return options


def _search_rule(args: argparse.Namespace) -> SearchRule | None:
    if not getattr(args, "find_max_rate", False):
        return None
    if getattr(args, "request_rate", None):
        raise UsageError("--find-max-rate chooses the rates itself: leave out --request-rate")
    if len(args.context) != 1:
        raise UsageError("--find-max-rate searches one --context at a time")
    if args.resume:
        raise UsageError("--find-max-rate cannot --resume: each search starts its own file")
    if not any(slo.judges_timing for slo in args.slo):
        raise UsageError("--find-max-rate needs a latency --slo to search against, e.g. --slo p95_ttft_ms=2000")
    try:
        return SearchRule(args.rate_start, args.rate_max, args.rate_tolerance, args.max_probes)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def add_gate_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--slo`` gates and ``--allow-untrusted``, shared by ``bench`` and ``bench collect``."""
    parser.add_argument(
        "--slo",
        type=slo_flag,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="exit 1 unless every cell meets it, e.g. p99_ttft_ms=2000, success_rate=0.99, request_throughput=5; "
        f"without a success_rate SLO every cell must have success_rate >= {DEFAULT_SUCCESS_RATE:g} "
        "(--slo success_rate=0 turns that off)",
    )
    parser.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="let --slo gates pass on cells measured by a saturated load generator (marked untrusted)",
    )


def add_facts_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """What serves the endpoint, for cost and the physical ceiling: shared by ``bench`` and ``bench collect``."""
    parser.add_argument(
        "--accelerator",
        help="accelerator serving the endpoint (default: the stack's), for cost and the physical ceiling",
    )
    parser.add_argument(
        "--accelerator-count",
        type=positive_int("--accelerator-count"),
        default=1,
        metavar="N",
        help="Cloud Run instances or TPU nodes serving the endpoint, each of the stack's shape (default 1)",
    )
    parser.add_argument(
        "--price-per-hour",
        type=positive_number("--price-per-hour"),
        metavar="USD",
        help="hourly price of what serves the endpoint (default: the list price of the stack's billed shape "
        "and provisioning model, serving/pricing.py)",
    )
    parser.add_argument(
        "--model-params",
        type=_params,
        metavar="N",
        help="parameters computed per token, e.g. 12B (default: read from the model name, e.g. gemma-4-12b-it)",
    )
    parser.add_argument(
        "--speculative-tokens",
        type=positive_int("--speculative-tokens", minimum=0),
        metavar="N",
        help="draft tokens a step the server's speculative decoding adds, 0 for none, for the decode ceiling "
        "(default: the stack's --speculative-config, else what the server's counters show)",
    )


def _register_bench(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="sweep concurrency x context and measure throughput and latency like `vllm bench serve`",
        description="Closed-loop sweep of streamed requests over --concurrency x --context. One JSON line per "
        "cell is appended to --output as it finishes; CSV, Markdown and PNG reports are written beside it. "
        "Exit codes: 0 ok, 1 an --slo violated, 2 usage error or endpoint unreachable, 130 interrupted.",
    )
    add_target_arguments(parser)
    load = add_workload_arguments(parser)
    load.add_argument(
        "--transport",
        choices=[kind.value for kind in TransportKind],
        default=TransportKind.AIOHTTP.value,
        help="aiohttp (default; keeps up with thousands of streams) or httpx's own (collapses from ~64)",
    )
    load.add_argument(
        "--workers",
        type=positive_int("--workers"),
        metavar="N",
        help="load-generator processes sharing each cell's users (default: one per "
        f"{USERS_PER_WORKER} users of the largest cell, at most the CPUs this process may use)",
    )
    add_open_loop_arguments(parser)
    add_scenario_arguments(parser)
    add_max_rate_arguments(parser)
    out = parser.add_argument_group("results")
    out.add_argument(
        "--output",
        type=Path,
        metavar="FILE.jsonl",
        help="results file (default bench-results/bench-<UTC time>.jsonl); reports go beside it",
    )
    out.add_argument("--resume", action="store_true", help="skip the cells --output already holds")
    out.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in CI logs)")
    out.add_argument("--json", action="store_true", help="print this run's cell records as JSON on stdout")
    judge = parser.add_argument_group("judgement")
    add_gate_arguments(judge)
    judge.add_argument(
        "--allow-skipped",
        action="store_true",
        help="pass even when some cells were skipped (e.g. context above the server's max_model_len); "
        "a run that measured no cell at all fails regardless",
    )
    judge.add_argument(
        "--on-cloud-run",
        action="store_true",
        help="generate the load from the stack's load-generator job beside the service (needs --stack and a "
        "bench block), then fetch and merge its results",
    )
    add_facts_arguments(judge)
    parser.set_defaults(handler=run_bench_command)


def _register_cloud(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bench task`` and ``bench collect`` (registered as ``bench-task``/``bench-collect``; verify.cli
    maps the two-word spelling onto them)."""
    task = subparsers.add_parser(
        "bench-task",
        prog="gemma-verify bench task",
        help="(run by the load-generator job) this task's share of every cell",
    )
    add_workload_arguments(task)
    task.add_argument("--run-id", required=True, help="the execution's folder under --results")
    task.add_argument("--url", help="the service (default $BENCH_URL)")
    task.add_argument("--model", help="served model name (default $BENCH_MODEL)")
    task.add_argument("--results", help="folder on the results volume (default $BENCH_RESULTS)")
    task.add_argument("--accelerator", help="what serves the endpoint (the stack's), recorded for collect's ceiling")
    task.add_argument(
        "--workers", type=positive_int("--workers"), help="worker processes (default $BENCH_WORKERS, else the CPUs)"
    )
    add_timeout_arguments(task)
    task.add_argument(
        "--barrier-timeout",
        type=positive_number("--barrier-timeout", "seconds"),
        default=DEFAULT_BARRIER_TIMEOUT_S,
        help="seconds to wait for the other tasks",
    )
    task.set_defaults(handler=run_task_command)
    collect = subparsers.add_parser(
        "bench-collect",
        prog="gemma-verify bench collect",
        help="merge a load-generator run's task files into JSONL, CSV, Markdown and PNG",
    )
    collect.add_argument("directory", type=Path, metavar="DIR", help="the run's folder (copied from the bucket)")
    collect.add_argument("--output", type=Path, metavar="FILE.jsonl", help="default DIR.jsonl")
    add_gate_arguments(collect)
    add_facts_arguments(collect)
    collect.set_defaults(handler=run_collect_command)


def _register_compare(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="per-cell deltas between two bench results files (e.g. MTP on vs off)",
        description="Match cells of A and B on context x concurrency and show B's change against A; changes "
        "within the two runs' own spread are marked as noise. Refuses files whose requests differ in output "
        "tokens or API (--allow-mismatch to compare anyway); warns when model, requests per cell or client "
        "transport differ. Exit codes: 0 compared, 2 usage error or mismatched workloads.",
    )
    parser.add_argument("a", type=Path, metavar="A.jsonl")
    parser.add_argument("b", type=Path, metavar="B.jsonl")
    parser.add_argument("--markdown", type=Path, metavar="FILE.md", help="also write the comparison as Markdown")
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare even when A and B asked for different output tokens per request or API",
    )
    parser.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="also judge cells a sweep marked untrusted (its load generator was CPU-bound): their would-be "
        "verdicts are marked * and counted apart",
    )
    group = parser.add_argument_group("three or more runs (or two with --matrix): stacks side by side")
    group.add_argument("more", nargs="*", type=Path, metavar="C.jsonl", help="more results files, one per run")
    group.add_argument("--matrix", action="store_true", help="compare two files as runs side by side, not A vs B")
    group.add_argument(
        "--slo",
        action="append",
        default=[],
        type=slo_flag,
        metavar="KEY=VALUE",
        help="what the cheapest run must meet, e.g. p99_ttft_ms=2000 (repeatable; success_rate >= 1 by default); "
        "with two files, a latency percentile it names is shown and judged as a column too",
    )
    group.add_argument(
        "--active-hours",
        type=_hours,
        default=DEFAULT_ACTIVE_HOURS,
        metavar="H",
        help=f"hours a day with traffic, for the scaled-to-zero monthly cost (default {DEFAULT_ACTIVE_HOURS:g})",
    )
    group.add_argument("--csv", type=Path, metavar="FILE.csv", help="also write every cell as CSV")
    group.add_argument("--chart", type=Path, metavar="FILE.png", help="also draw each run's chosen cost as a PNG")
    parser.set_defaults(handler=run_compare_command)


# --- flags -> options --------------------------------------------------------------------------------


def workload_options(args: argparse.Namespace) -> Workload:
    """The workload flags (``add_workload_arguments``, and ``add_open_loop_arguments`` where given) as a
    ``Workload``."""
    if getattr(args, "workload", None) is not None:
        _from_workload_file(args)
    rates: tuple[float, ...] = getattr(args, "request_rate", None) or ()
    if getattr(args, "find_max_rate", False):
        rates = (args.rate_start,)  # an open-loop plan; the search chooses each probe's rate
    concurrency = tuple(args.concurrency)
    if rates:
        if concurrency != DEFAULT_CONCURRENCY:
            raise UsageError(
                "--concurrency is the closed loop's users; with --request-rate the load is the rate, bounded by "
                "--max-in-flight"
            )
        concurrency = (args.max_in_flight,)
    return Workload(
        concurrency=concurrency,
        request_rates=rates,
        arrival=ArrivalKind(getattr(args, "arrival", ArrivalKind.POISSON.value)),
        burstiness=getattr(args, "burstiness", 1.0),
        seed=getattr(args, "seed", DEFAULT_SEED),
        scenario=_scenario(args),
        context=tuple(args.context),
        max_tokens=args.max_tokens,
        requests=args.requests,
        warmup=args.warmup,
        api=Api(args.api),
        ignore_eos=args.ignore_eos,
    )


def _as_tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value


def _from_workload_file(args: argparse.Namespace) -> None:
    """``--workload FILE``: the advise workload's request kinds, output and load as the sweep's flags (a flag of
    those given too is a usage error: two workloads)."""
    from verify.advise.workload import LONGEST_WEIGHT, load_workload  # noqa: PLC0415 - only for --workload

    given = [
        flag
        for flag, dest, default in (
            ("--context", "context", DEFAULT_CONTEXT),
            ("--concurrency", "concurrency", DEFAULT_CONCURRENCY),
            ("--max-tokens", "max_tokens", DEFAULT_MAX_TOKENS),
        )
        if _as_tuple(getattr(args, dest)) != _as_tuple(default)
    ]
    if given or getattr(args, "request_rate", None):
        flags = ", ".join(given) or "--request-rate"
        raise UsageError(f"--workload FILE states the workload: give no {flags} with it")
    workload = load_workload(Path(args.workload))
    values = workload.options_values()
    kinds = [(p, o, w) for p, o, w in values["lengths"] if w > LONGEST_WEIGHT * 10]  # type: ignore[attr-defined]
    total = sum(w for _, _, w in kinds)
    args.context = sorted({p for p, _, _ in kinds})
    args.max_tokens = max(1, round(sum(o * w for _, o, w in kinds) / total))
    if workload.users is not None:
        args.concurrency = [workload.users]
    elif workload.rate is not None:
        args.request_rate = [workload.rate]
    else:
        raise UsageError("--workload: a batch file has no users or rate to replay; bench its rate with --request-rate")


def _gate(args: argparse.Namespace) -> Gate:
    return Gate(slos=tuple(args.slo), allow_untrusted=args.allow_untrusted)


def _facts(args: argparse.Namespace) -> ServingFacts:
    return ServingFacts(
        accelerator=args.accelerator,
        accelerator_count=args.accelerator_count,
        price_per_hour=args.price_per_hour,
        model_params=args.model_params,
        speculative_tokens=args.speculative_tokens,
    )


def _one_process_only(args: argparse.Namespace, workload: Workload) -> None:
    """``--workers`` spreads closed-loop users over processes; a run that cannot use them says so instead
    of silently measuring from one process."""
    if not args.workers or args.workers == 1:
        return
    if workload.request_rates:
        why = "open-loop cells (--request-rate, --find-max-rate) are sent on one schedule from this process"
    elif workload.scenario.kind is Scenario.MULTI_TURN:
        why = "a multi-turn chat's turns follow each other's answers, so its chats run in this process"
    elif workload.scenario.kind is Scenario.NEEDLE:
        why = "the needle's recall reads every answer's text, so its requests run in this process"
    else:
        return
    raise UsageError(
        f"--workers {args.workers}: {why}; a client that cannot keep up marks its cells untrusted (the reason "
        "says so). Leave out --workers, or measure concurrency (closed loop) to spread users over processes"
    )


def bench_options(args: argparse.Namespace, output: Path) -> BenchOptions:
    """``verify bench``'s flags as ``BenchOptions`` (the target flags are resolved apart)."""
    workload = workload_options(args)
    _one_process_only(args, workload)
    max_rate = _search_rule(args)
    check_workload(workload, max_rate)
    return BenchOptions(
        output=output,
        workload=workload,
        timeouts=timeout_options(args),
        api_key_env=args.api_key_env,
        transport=TransportKind(args.transport),
        workers=args.workers,
        resume=args.resume,
        progress=not args.no_progress,
        allow_skipped=args.allow_skipped,
        gate=_gate(args),
        facts=_facts(args),
        max_rate=max_rate,
    )


# --- bench -----------------------------------------------------------------------------------------


def _default_output() -> Path:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return Path("bench-results") / f"bench-{stamp}.jsonl"


def _stderr() -> Console:
    return Console(stderr=True, soft_wrap=True)


def _table_console() -> Console:
    # Piped output (CI logs) gets a wide table rather than rich's 80-column default.
    return Console(width=None if sys.stdout.isatty() else 160)


def run_bench_command(args: argparse.Namespace) -> int:
    console = _stderr()
    output: Path = args.output if args.output is not None else _default_output()
    # Before the target: an unusable --output is named first, without asking Pulumi (run_bench checks again).
    check_output(output)
    options = bench_options(args, output)
    if args.on_cloud_run:
        if args.stack is None:
            raise UsageError("--on-cloud-run needs --stack (the job is part of the stack)")
        return _show_collected(run_on_cloud_run(args.stack, options, console), console)
    report = run_bench(resolve_target(target_options(args)), options, console=console)
    return show_bench_report(report, as_json=args.json, console=console)


def show_bench_report(report: BenchReport, *, as_json: bool, console: Console) -> int:
    """What `verify bench` prints once the sweep ended (also for promote's bench gate); the exit code.

    Raises ``UsageError`` (exit 2) when the endpoint stopped answering or the reports could not be written.
    """
    output = report.output
    if report.interrupted:
        console.print(
            f"\n[yellow]interrupted[/]: {len(report.records)} finished cells are kept in {output}; rerun the same "
            f"command with --output {output} --resume to measure the rest"
        )
        return report.exit_code
    _show(report, as_json=as_json, console=console)
    if report.lost is not None:
        raise UsageError(report.lost)
    for problem in report.failures:
        console.print(f"[red]failed[/] {markup_safe(problem)}")
    return report.exit_code


def _show(report: BenchReport, *, as_json: bool, console: Console) -> None:
    """The table (or ``--json``) and where the reports are; nothing but the file when no cell was measured."""
    output = report.output
    if as_json:
        print(json.dumps([record.model_dump(mode="json") for record in report.new], indent=2))
    if not report.measured_any:
        console.print(f"results: {output}; no reports written: no cell was measured")
        return
    if not report.new:
        _table_console().print(summary_table(list(report.records)))
        console.print(f"results: {output}; nothing new was measured, so no file was changed")
        return
    if report.reports_error is not None:
        raise UsageError(report.reports_error)
    if not as_json:
        _table_console().print(summary_table(list(report.records)))
    console.print(f"results: {output}; reports: {', '.join(str(path) for path in report.reports)}")
    if report.max_rate is not None:
        console.print(f"search rule: {report.max_rate.rule}")
        console.print(report.max_rate.describe())


# --- collect and task --------------------------------------------------------------------------------


def _show_collected(report: CollectReport, console: Console) -> int:
    if report.copies_dropped:
        console.print(
            f"{report.copies_dropped} share lines were exact copies of others (a second copy of the run inside "
            f"{report.directory}?) and were counted once"
        )
    _table_console().print(summary_table(list(report.records), advice=JOB_ADVICE))
    console.print(
        f"merged run {report.run_id}: {len(report.records)} cells into {report.output}; reports: "
        f"{', '.join(str(p) for p in report.reports)}"
    )
    for line in report.failures:
        console.print(f"[red]failed[/] {markup_safe(line)}")
    return report.exit_code


def run_collect_command(args: argparse.Namespace) -> int:
    directory: Path = args.directory
    output: Path = args.output if args.output is not None else directory.with_suffix(".jsonl")
    report = collect_run(directory, CollectOptions(output=output, gate=_gate(args), facts=_facts(args)))
    return _show_collected(report, _stderr())


def run_task_command(args: argparse.Namespace) -> int:
    """One task of the job: its share of every cell, written to <results>/<run id>/task-<index>.jsonl."""
    workload = workload_options(args)
    check_workload(workload)
    options = TaskOptions(
        run_id=args.run_id,
        workload=workload,
        timeouts=timeout_options(args),
        url=args.url,
        model=args.model,
        results=args.results,
        accelerator=args.accelerator,
        workers=args.workers,
        barrier_timeout_s=args.barrier_timeout,
    )
    report = run_bench_task(options, os.environ)
    print(f"task {report.index} of {report.count}: {report.cells} cells measured into {report.output}", flush=True)
    return EXIT_OK


# --- compare -----------------------------------------------------------------------------------------


def run_compare_command(args: argparse.Namespace) -> int:
    if args.more or args.matrix:
        options = MatrixOptions(
            slos=tuple(args.slo),
            active_hours=args.active_hours,
            markdown=args.markdown,
            csv=args.csv,
            chart=args.chart,
            allow_untrusted=args.allow_untrusted,
        )
        matrix = run_matrix([args.a, args.b, *args.more], options)
        sys.stdout.write(matrix.markdown)
        if matrix.chart_drawn is False:
            print(f"compare: no chart: no run has a cell that meets {matrix.slo_text}", file=sys.stderr)
        return EXIT_OK
    compare = CompareOptions(
        markdown=args.markdown,
        allow_mismatch=args.allow_mismatch,
        allow_untrusted=args.allow_untrusted,
        slo_keys=tuple(slo.key for slo in args.slo),
    )
    report = run_compare(args.a, args.b, compare)
    console = Console()
    console.print(
        comparison_view(
            list(report.rows),
            a_name=report.a_name,
            b_name=report.b_name,
            width=console.width,
            mismatches=list(report.mismatches),
        )
    )
    if report.estimates:
        print("\nmeasured beside the estimate (docs/advisor.md):")
        print("\n".join(f"  {escape_controls(line, keep_newlines=False)}" for line in report.estimates))
    return EXIT_OK
