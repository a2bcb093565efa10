"""`gemma-verify promote --stack NAME [--rollback]`: the flags, mapped to ``PromoteOptions``, and the
printed verdict. The command itself is ``verify.promote.run.run_promote``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from verify import UsageError
from verify.argtypes import positive_int, positive_int_list, positive_number
from verify.bench.cli import show_bench_report, slo_flag
from verify.bench.command import BenchReport
from verify.bench.slo import parse_slo, requests_needed, thin_gates
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options
from verify.health.cli import add_quality_arguments, quality_options
from verify.health.console import print_health, waiting_printer
from verify.promote.cloud_run import DEFAULT_API_URL
from verify.promote.gates import BenchGate
from verify.promote.run import DEFAULT_WAIT_S, PromoteOptions, Seams, run_promote

DEFAULT_STEPS = "100"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify promote`` to the CLI."""
    parser = subparsers.add_parser(
        "promote",
        help="gate a gated Cloud Run stack's candidate revision (or a gated GKE fleet's candidate track) with "
        "health and bench, then move traffic to it",
        description="Reads the stack's outputs and the live service (Cloud Run Admin API v2), runs verify health "
        "and a short verify bench with --slo gates against the candidate's tagged URL, and only if both pass "
        "moves traffic to it with `pulumi up` (Automation API). Exit codes: 0 promoted (or rolled back), "
        "1 a gate failed and traffic was left as it was, 2 usage error or something unreachable.",
    )
    add_target_arguments(parser)
    rollout = parser.add_argument_group("rollout")
    rollout.add_argument(
        "--rollback",
        action="store_true",
        help="send all traffic back to the previous revision (no gates)",
    )
    rollout.add_argument(
        "--steps",
        type=_steps,
        default=_steps(DEFAULT_STEPS),
        metavar="LIST",
        help="the candidate's share after each step, ending at 100, e.g. 10,50,100 (a health check of the "
        f"candidate between steps; default {DEFAULT_STEPS})",
    )
    rollout.add_argument(
        "--wait",
        type=positive_number("--wait", "seconds"),
        default=DEFAULT_WAIT_S,
        metavar="S",
        help=f"how long the candidate may take to answer /health (default {DEFAULT_WAIT_S:g}: a cold start loads "
        "the model)",
    )
    rollout.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the Pulumi project whose `pulumi up` moves traffic (default: $GEMMA_SERVING_ROOT, else this checkout)",
    )
    rollout.add_argument(
        "--policy-pack",
        action="append",
        default=[],
        metavar="DIR",
        help="policy pack every traffic update runs with, like the deploy workflow's (repeatable)",
    )
    rollout.add_argument(
        "--candidate-url",
        default=None,
        metavar="URL",
        help="GKE gated fleets: the candidate Service's address when its internal one is not reachable from here "
        "(the stack's candidatePortForward output, then http://127.0.0.1:<port>)",
    )
    rollout.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document at the end: the verdict (promoted, untouched, handed-back, "
        "not-handed-back, ...) and what Cloud Run routes, as last read",
    )
    rollout.add_argument(
        "--cloud-run-api",
        default=DEFAULT_API_URL,
        metavar="URL",
        help=f"Cloud Run Admin API base URL (default {DEFAULT_API_URL})",
    )
    gate = parser.add_argument_group("bench gate")
    gate.add_argument(
        "--slo", type=_slo, action="append", default=[], metavar="KEY=VALUE", help="as verify bench --slo"
    )
    gate.add_argument(
        "--bench-concurrency",
        type=positive_int_list("--bench-concurrency"),
        default=BenchGate.concurrency,
        metavar="LIST",
        help=f"default {_listed(BenchGate.concurrency)}",
    )
    gate.add_argument(
        "--bench-context",
        type=positive_int_list("--bench-context"),
        default=BenchGate.context,
        metavar="LIST",
        help=f"default {_listed(BenchGate.context)}",
    )
    gate.add_argument(
        "--bench-max-tokens", type=positive_int("--bench-max-tokens"), default=BenchGate.max_tokens, metavar="N"
    )
    gate.add_argument(
        "--bench-requests",
        type=positive_int("--bench-requests"),
        default=None,
        metavar="N",
        help=f"measured requests per cell (default {BenchGate.requests}, or the fewest an --slo percentile can be "
        "judged on: p90 36, p95 72, p99 368)",
    )
    gate.add_argument(
        "--bench-warmup", type=positive_int("--bench-warmup", minimum=0), default=BenchGate.warmup, metavar="N"
    )
    gate.add_argument(
        "--bench-output-dir",
        type=Path,
        default=BenchGate.output_dir,
        metavar="DIR",
        help="where the bench gate's results go (default %(default)s)",
    )
    add_quality_arguments(parser)
    parser.set_defaults(handler=run_promote_command)


def promote_options(args: argparse.Namespace) -> PromoteOptions:
    """``verify promote``'s flags as options (the target flags are ``target_options``)."""
    return PromoteOptions(
        rollback=args.rollback,
        steps=args.steps,
        wait_s=args.wait,
        project_dir=args.project_dir,
        policy_packs=tuple(args.policy_pack),
        candidate_url=args.candidate_url,
        cloud_run_api=args.cloud_run_api,
        timeouts=timeout_options(args),
        bench_gate=_bench_gate(args),
        quality=quality_options(args),
    )


def _bench_gate(args: argparse.Namespace) -> BenchGate:
    """The bench gate's flags. A percentile SLO is judged on enough requests per cell for its interval: the
    default count rises to it, an explicit ``--bench-requests`` below it is refused before any gate runs (a p99
    judged on 16 requests is the slowest of 16)."""
    slos = tuple(parse_slo(slo) for slo in args.slo)
    requests = args.bench_requests
    if requests is None:
        requests = max(BenchGate.requests, requests_needed(slos))
    elif thin := thin_gates(slos, requests, flag="--bench-requests"):
        raise UsageError(thin)
    return BenchGate(
        concurrency=tuple(args.bench_concurrency),
        context=tuple(args.bench_context),
        max_tokens=args.bench_max_tokens,
        requests=requests,
        warmup=args.bench_warmup,
        slos=slos,
        output_dir=args.bench_output_dir,
    )


def run_promote_command(args: argparse.Namespace, seams: Seams | None = None) -> int:
    shown = replace(seams or Seams(), show_health=print_health, show_bench=_show_bench, waiting=waiting_printer)
    result = run_promote(target_options(args), promote_options(args), shown)
    if args.json:
        print(result.report.model_dump_json(), flush=True)
    return result.exit_code


def _show_bench(report: BenchReport) -> None:
    show_bench_report(report, as_json=False, console=Console(stderr=True, soft_wrap=True))


def _listed(numbers: tuple[int, ...]) -> str:
    return ",".join(str(number) for number in numbers)


def _slo(value: str) -> str:
    """Checked here, so a typo fails before any gate runs; kept as written (the deploy workflow's values)."""
    slo_flag(value)
    return value


def _steps(value: str) -> tuple[int, ...]:
    try:
        steps = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--steps takes comma-separated percentages, e.g. 10,50,100; got {value!r}"
        ) from None
    if not steps or steps[-1] != 100 or any(not 0 < step <= 100 for step in steps):
        raise argparse.ArgumentTypeError(f"--steps must be percentages from 1 to 100 ending at 100, got {value!r}")
    if list(steps) != sorted(set(steps)):
        raise argparse.ArgumentTypeError(f"--steps must rise step by step, got {value!r}")
    return steps
