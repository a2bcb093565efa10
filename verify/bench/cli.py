"""`python -m verify bench` (and the registration of `compare`): flags, wiring and exit codes.

Exit codes: 0 every cell measured and every ``--slo`` met; 1 an SLO was violated; 2 a usage error
or an endpoint that cannot be reached, authorised or does not serve the model; 130 interrupted
(finished cells are kept; rerun with ``--resume``).
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
import pydantic
from rich.console import Console

from verify import UsageError
from verify.auth import auth_advice
from verify.bench import cloud_cli, compare_command, server_metrics
from verify.bench.capacity import TransportKind, make_transport, raise_fd_limit
from verify.bench.console import ProgressObserver, summary_table
from verify.bench.judgement import AcceleratorFacts, accelerator_facts, params_from_model_name, parse_params
from verify.bench.prompts import PromptBook, choose_counter, server_max_model_len
from verify.bench.report import write_reports
from verify.bench.results import CellRecord, done_keys, load_results
from verify.bench.slo import Slo, parse_slo
from verify.bench.sweep import Endpoint, plan_from_arguments, run_sweep
from verify.bench.trust import gate_failures
from verify.bench.workers import USERS_PER_WORKER, ClientSpec, worker_pool
from verify.client import client_for, default_timeout
from verify.responses import ModelList, VersionInfo, body_excerpt
from verify.streaming import Api
from verify.target import (
    Target,
    add_target_arguments,
    positive_int,
    positive_int_list,
    positive_number,
    resolve_target,
)

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
    cloud_cli.register(subparsers, add_workload_arguments, add_gate_arguments)


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
        help="exit 1 unless every cell meets it, e.g. p99_ttft_ms=2000, success_rate=0.99, request_throughput=5",
    )
    parser.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="let --slo gates pass on cells measured by a saturated load generator (marked untrusted)",
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
        "--accelerator",
        help="accelerator serving the endpoint (default: the stack's), for cost and the physical ceiling",
    )
    judge.add_argument(
        "--accelerator-count",
        type=positive_int("--accelerator-count"),
        default=1,
        metavar="N",
        help="Cloud Run instances or TPU nodes serving the endpoint, each of the stack's shape (default 1)",
    )
    judge.add_argument(
        "--price-per-hour",
        type=positive_number("--price-per-hour"),
        metavar="USD",
        help="hourly price of what serves the endpoint (default: the list price of the stack's billed shape "
        "and provisioning model, stacks/pricing.py)",
    )
    judge.add_argument(
        "--model-params",
        type=_params,
        metavar="N",
        help="parameters computed per token, e.g. 12B (default: read from the model name, e.g. gemma-4-12b-it)",
    )
    judge.add_argument(
        "--on-cloud-run",
        action="store_true",
        help="generate the load from the stack's load-generator job beside the service (needs --stack and a "
        "bench block), then fetch and merge its results",
    )
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
    loaded = load_results(path)
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
    if args.on_cloud_run:
        return cloud_cli.run_on_cloud_run(args, output, console)
    target = resolve_target(args)
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
    try:
        written = asyncio.run(_bench(args, target, output, existing=existing, facts=facts, console=console))
    except KeyboardInterrupt:
        kept = len(load_results(output).records)
        console.print(
            f"\n[yellow]interrupted[/]: {kept} finished cells are kept in {output}; rerun the same command with "
            f"--output {output} --resume to measure the rest"
        )
        return EXIT_INTERRUPTED
    records = load_results(output).records
    metrics_file = output.with_suffix(".metrics.json")
    summary = _metrics_summary(metrics_file)
    reports = write_reports(records, output.with_suffix(""), metrics_summary=summary)
    if args.json:
        print(json.dumps([record.model_dump(mode="json") for record in written], indent=2))
    else:
        # Piped output (CI logs) gets a wide table rather than rich's 80-column default.
        Console(width=None if sys.stdout.isatty() else 160).print(summary_table(records))
    console.print(f"results: {output}; reports: {', '.join(str(path) for path in reports)}")
    failures = gate_failures(args.slo, records, allow_untrusted=args.allow_untrusted)
    for line in failures:
        console.print(line)
    return EXIT_SLO_FAILED if failures else EXIT_OK


def _metrics_summary(path: Path) -> str | None:
    before, after = server_metrics.load_snapshots(path)
    return server_metrics.summary_markdown(before, after)


async def _discover(client: httpx.AsyncClient, target: Target, args: argparse.Namespace) -> _Discovered:
    """Reach the endpoint once before measuring: exit 2 now rather than fill a file with failures."""
    try:
        response = await client.get("/v1/models")
    except httpx.HTTPError as exc:
        raise UsageError(f"{target.base_url} is unreachable: {type(exc).__name__}: {exc}") from None
    if response.status_code in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        raise UsageError(
            f"{target.base_url}/v1/models answered {response.status_code}: "
            f"{auth_advice(target, api_key_env=args.api_key_env)}"
        )
    if response.status_code != httpx.codes.OK:
        raise UsageError(
            f"{target.base_url}/v1/models answered {response.status_code} ({body_excerpt(response.text)}); "
            "is the server ready? run `python -m verify health` first"
        )
    try:
        names = ModelList.model_validate_json(response.content).names
    except pydantic.ValidationError:
        raise UsageError(f"{target.base_url}/v1/models did not answer a model list") from None
    model = target.model
    if model is None:
        if len(names) != 1:
            raise UsageError(f"the server serves {names}; name the one to benchmark with --model")
        model = names[0]
    elif model not in names:
        raise UsageError(f"the server does not serve {model!r}; it serves {names} (use --model)")
    version: str | None = None
    try:
        answer = await client.get("/version")
        if answer.status_code == httpx.codes.OK:
            version = VersionInfo.model_validate_json(answer.content).version
    except (httpx.HTTPError, pydantic.ValidationError):
        version = None
    max_len = await server_max_model_len(client, model) or target.max_model_len
    return _Discovered(model, version, max_len)


async def _bench(
    args: argparse.Namespace,
    target: Target,
    output: Path,
    *,
    existing: list[CellRecord],
    facts: AcceleratorFacts,
    console: Console,
) -> list[CellRecord]:
    transport_kind = TransportKind(args.transport)
    async with client_for(target, args, transport=make_transport(transport_kind)) as client:
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
        counter = await choose_counter(client, found.model, plan.api)
        before = await server_metrics.snapshot(client, found.model)
        todo = [cell for cell in plan.cells() if plan.key(*cell) not in done_keys(existing)]
        console.print(
            f"benchmarking {found.model} at {target.base_url} (vLLM {found.vllm_version or 'unknown'}): "
            f"{len(todo)} cells to measure, {len(plan.cells()) - len(todo)} already in {output}"
        )
        spec = ClientSpec(target.base_url, transport_kind, args.connect_timeout, args.timeout, max(args.concurrency))
        async with worker_pool(args.workers, spec) as pool:
            if pool is not None:
                console.print(f"load generation: {pool.size} worker processes share each cell's users")
            if args.no_progress:
                written = await run_sweep(
                    client, plan, endpoint, results_path=output, done=done_keys(existing), counter=counter, pool=pool
                )
            else:
                with ProgressObserver(console, cells=len(todo)) as observer:
                    written = await run_sweep(
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
        server_metrics.write_snapshots(output.with_suffix(".metrics.json"), before, after)
        return written
