"""`python -m verify bench` (and the registration of `compare`): flags, wiring and exit codes.

Exit codes: 0 every cell measured and every ``--slo`` (and the default ``success_rate`` gate) met;
1 an SLO was violated, or fewer cells were measured than asked (none at all, or some skipped without
``--allow-skipped``); 2 a usage error, an unusable ``--output``, or an endpoint that cannot be reached,
authorised, does not serve the model or stops answering mid-sweep (finished cells and their reports are
kept; rerun with ``--resume`` once it is back); 130 interrupted (likewise).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console

from verify import UsageError, discovery
from verify.argtypes import positive_int, positive_int_list, positive_number
from verify.auth import auth_advice
from verify.bench import cloud_cli, compare_command, resume, server_metrics
from verify.bench.console import ProgressObserver, summary_table
from verify.bench.judgement import AcceleratorFacts, accelerator_facts, params_from_model_name, parse_params
from verify.bench.load_generator import TransportKind, make_transport, raise_fd_limit
from verify.bench.outputs import check_output
from verify.bench.prompts import PromptBook, choose_counter
from verify.bench.report import write_reports
from verify.bench.results import CellKey, CellRecord, done_keys, read_checked
from verify.bench.slo import DEFAULT_SUCCESS_RATE, Slo, parse_slo
from verify.bench.sweep import Endpoint, EndpointLostError, plan_from_arguments, run_sweep
from verify.bench.trust import gate_failures
from verify.bench.workers import USERS_PER_WORKER, ClientSpec, worker_pool
from verify.client import client_for, default_timeout
from verify.responses import body_excerpt
from verify.streaming import Api
from verify.target import Target, resolve_target
from verify.target.cli import add_target_arguments, target_options, timeout_options

EXIT_OK = 0
EXIT_SLO_FAILED = 1
EXIT_INTERRUPTED = 130
DEFAULT_CONCURRENCY = "1,8,32"
DEFAULT_CONTEXT = "128,1024"
DEFAULT_MAX_TOKENS = 128


def _slo(value: str) -> Slo:
    try:
        return parse_slo(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _params(value: str) -> float:
    try:
        return parse_params(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify bench`` and ``verify compare`` to the CLI."""
    _register_bench(subparsers)
    compare_command.register(subparsers)
    cloud_cli.register(subparsers, add_workload_arguments, add_gate_arguments, add_facts_arguments)


def add_workload_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The sweep's workload flags, shared by ``bench`` and the load-generator job's ``bench task``."""
    load = parser.add_argument_group("workload")
    load.add_argument(
        "--concurrency",
        type=positive_int_list("--concurrency"),
        default=positive_int_list("--concurrency")(DEFAULT_CONCURRENCY),
        metavar="LIST",
        help=f"users (requests in flight), comma-separated (default {DEFAULT_CONCURRENCY})",
    )
    load.add_argument(
        "--context",
        type=positive_int_list("--context"),
        default=positive_int_list("--context")(DEFAULT_CONTEXT),
        metavar="LIST",
        help=f"prompt lengths in tokens as the server counts them, comma-separated (default {DEFAULT_CONTEXT})",
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
        "--ignore-eos",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="force exactly --max-tokens output tokens (vLLM's ignore_eos + min_tokens; default on)",
    )
    return load


def add_gate_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--slo`` gates and ``--allow-untrusted``, shared by ``bench`` and ``bench collect``."""
    parser.add_argument(
        "--slo",
        type=_slo,
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


# --- bench -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Discovered:
    model: str
    vllm_version: str | None
    max_model_len: int | None


def _default_output() -> Path:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return Path("bench-results") / f"bench-{stamp}.jsonl"


def _existing_records(path: Path, *, resume: bool, console: Console) -> list[CellRecord]:
    loaded = read_checked(path)
    if loaded.unreadable_lines:
        console.print(
            f"[yellow]warning[/] {path}: lines {loaded.unreadable_lines} are not cell records (e.g. cut off by a "
            "kill) and are ignored"
        )
    if loaded.records and not resume:
        raise UsageError(
            f"--output {path} already holds {len(loaded.records)} cells; pass --resume to continue that sweep or "
            "choose another --output"
        )
    return loaded.records


def run_bench_command(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    output: Path = args.output if args.output is not None else _default_output()
    check_output(output)
    if args.on_cloud_run:
        return cloud_cli.run_on_cloud_run(args, output, console)
    target = resolve_target(target_options(args))
    existing = _existing_records(output, resume=args.resume, console=console)
    try:
        facts = accelerator_facts(
            args.accelerator or target.accelerator,
            count=args.accelerator_count,
            price_override=args.price_per_hour,
            billing=target.billing if not args.accelerator else None,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if facts.price_basis:
        console.print(f"cost basis: {facts.price_basis}")
    fd_warning = raise_fd_limit(max(args.concurrency))
    if fd_warning:
        console.print(f"[yellow]warning[/] {fd_warning}")
    lost: EndpointLostError | None = None
    try:
        planned = asyncio.run(_bench(args, target, output, existing=existing, facts=facts, console=console))
    except KeyboardInterrupt:
        kept = len(read_checked(output).records)
        console.print(
            f"\n[yellow]interrupted[/]: {kept} finished cells are kept in {output}; rerun the same command with "
            f"--output {output} --resume to measure the rest"
        )
        return EXIT_INTERRUPTED
    except EndpointLostError as exc:
        lost, planned = exc, []
    except OSError as exc:
        raise UsageError(
            f"--output {output}: writing a cell failed ({exc.strerror or exc}); finished cells are kept"
        ) from None
    records = read_checked(output).records
    _show(args, records, new=[r for r in records if r.key not in done_keys(existing)], output=output, console=console)
    if lost is not None:
        raise UsageError(
            f"the endpoint stopped answering: {lost.cell} was not measured: {lost.cause}; "
            f"{sum(r.measured for r in records)} measured cells are kept in {output}: once the server answers "
            f"again, rerun with --output {output} --resume to measure the rest"
        )
    problems = _coverage_problems(planned, records, allow_skipped=args.allow_skipped)
    problems += gate_failures(args.slo, records, allow_untrusted=args.allow_untrusted)
    for problem in problems:
        console.print(f"[red]failed[/] {problem}")
    return EXIT_SLO_FAILED if problems else EXIT_OK


def _show(
    args: argparse.Namespace, records: list[CellRecord], *, new: list[CellRecord], output: Path, console: Console
) -> None:
    """The table (or ``--json``) and the reports; none of them when no cell was measured."""
    if args.json:
        print(json.dumps([record.model_dump(mode="json") for record in new], indent=2))
    if not any(record.measured for record in records):
        console.print(f"results: {output}; no reports written: no cell was measured")
        return
    if not new:
        Console(width=None if sys.stdout.isatty() else 160).print(summary_table(records))
        console.print(f"results: {output}; nothing new was measured, so no file was changed")
        return
    summary = _metrics_summary(output.with_suffix(".metrics.json"))
    try:
        reports = write_reports(records, output.with_suffix(""), metrics_summary=summary)
    except OSError as exc:
        raise UsageError(f"--output {output}: writing the reports failed ({exc.strerror or exc})") from None
    if not args.json:
        # Piped output (CI logs) gets a wide table rather than rich's 80-column default.
        Console(width=None if sys.stdout.isatty() else 160).print(summary_table(records))
    console.print(f"results: {output}; reports: {', '.join(str(path) for path in reports)}")


def _coverage_problems(planned: list[CellKey], records: list[CellRecord], *, allow_skipped: bool) -> list[str]:
    """A gate cannot pass on nothing: every cell asked for must be measured (skips only when allowed)."""
    latest = {record.key: record for record in records}
    missing = [latest.get(key) for key in planned if key not in latest or not latest[key].measured]
    if not missing:
        return []
    reasons = sorted({record.skip_reason or "skipped" for record in missing if record is not None})
    why = f" ({'; '.join(reasons)})" if reasons else ""
    if len(missing) == len(planned):
        return [f"no cell was measured{why}: nothing to judge, so the run fails"]
    if allow_skipped:
        return []
    return [f"{len(missing)} of {len(planned)} cells were not measured{why}; pass --allow-skipped to accept that"]


def _metrics_summary(path: Path) -> str | None:
    before, after = server_metrics.load_snapshots(path)
    return server_metrics.summary_markdown(before, after)


async def _discover(client: httpx.AsyncClient, target: Target, args: argparse.Namespace) -> _Discovered:
    """Reach the endpoint once before measuring: exit 2 now rather than fill a file with failures."""
    try:
        models = await discovery.served_models(client)
    except discovery.AnswerError as exc:
        raise UsageError(_unusable(exc, target, args)) from None
    card = discovery.find_card(models, target.model)
    if card is None:
        if target.model is None:
            raise UsageError(f"the server serves {models.names}; name the one to benchmark with --model")
        raise UsageError(f"the server does not serve {target.model!r}; it serves {models.names} (use --model)")
    try:
        version: str | None = await discovery.vllm_version(client)
    except discovery.AnswerError:
        version = None
    return _Discovered(card.id, version, card.max_model_len or target.max_model_len)


def _unusable(exc: discovery.AnswerError, target: Target, args: argparse.Namespace) -> str:
    where = f"{target.base_url}{exc.path}"
    if exc.failure is not None:
        return f"{target.base_url} is unreachable: {exc.failure.kind.value} ({exc.failure.detail})"
    if exc.status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        return f"{where} answered {exc.status}: {auth_advice(target, api_key_env=args.api_key_env)}"
    if exc.problem is discovery.AnswerProblem.STATUS:
        return (
            f"{where} answered {exc.status} ({body_excerpt(exc.body)}); is the server ready? "
            "run `python -m verify health` first"
        )
    return f"{where} did not answer a model list: {body_excerpt(exc.body)}"


async def _bench(
    args: argparse.Namespace,
    target: Target,
    output: Path,
    *,
    existing: list[CellRecord],
    facts: AcceleratorFacts,
    console: Console,
) -> list[CellKey]:
    """Measure the cells not in ``existing``; returns the keys of every cell this command asked for."""
    transport_kind = TransportKind(args.transport)
    async with client_for(
        target, api_key_env=args.api_key_env, timeouts=timeout_options(args), transport=make_transport(transport_kind)
    ) as client:
        found = await _discover(client, target, args)
        plan = plan_from_arguments(
            args, model=found.model, timeouts=default_timeout(connect_s=args.connect_timeout, read_s=args.timeout)
        )
        endpoint = Endpoint(
            base_url=target.base_url,
            platform=target.platform,
            vllm_version=found.vllm_version,
            max_model_len=found.max_model_len,
            admission_limit=target.admission_limit,
            transport=transport_kind.value,
            accelerator=facts,
            model_params=args.model_params or params_from_model_name(found.model),
        )
        found_differences = resume.differences(existing, plan, endpoint)
        if found_differences:
            raise UsageError(resume.refusal(output, found_differences))
        todo = [cell for cell in plan.cells() if plan.key(*cell) not in done_keys(existing)]
        console.print(
            f"benchmarking {found.model} at {target.base_url} (vLLM {found.vllm_version or 'unknown'}): "
            f"{len(todo)} cells to measure, {len(plan.cells()) - len(todo)} already in {output}"
        )
        if not todo:
            # Nothing to measure: every file stays as it is (no empty metrics window, no rewritten reports).
            return [plan.key(*cell) for cell in plan.cells()]
        counter = await choose_counter(client, found.model, plan.api)
        before = await server_metrics.snapshot(client, found.model)
        spec = ClientSpec(target.base_url, transport_kind, args.connect_timeout, args.timeout, max(args.concurrency))
        async with worker_pool(args.workers, spec) as pool:
            if pool is not None:
                console.print(f"load generation: {pool.size} worker processes share each cell's users")
            if args.no_progress:
                await run_sweep(
                    client, plan, endpoint, results_path=output, done=done_keys(existing), counter=counter, pool=pool
                )
            else:
                with ProgressObserver(console, cells=len(todo)) as observer:
                    await run_sweep(
                        client,
                        plan,
                        endpoint,
                        results_path=output,
                        done=done_keys(existing),
                        counter=counter,
                        book=PromptBook(),
                        observer=observer,
                        pool=pool,
                    )
        after = await server_metrics.snapshot(client, found.model)
        server_metrics.write_snapshots(server_metrics.window_path(output), before, after)
        return [plan.key(*cell) for cell in plan.cells()]
