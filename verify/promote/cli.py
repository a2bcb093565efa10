"""`python -m verify promote --stack NAME [--rollback]`: the subcommand, its flags and its wiring."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.console import Console

from verify import UsageError
from verify.argtypes import positive_int, positive_int_list, positive_number
from verify.bench.cli import show_bench_report, slo_flag
from verify.bench.command import BenchReport
from verify.bench.slo import parse_slo
from verify.health.console import print_health, waiting_printer
from verify.promote.cloud_run import (
    DEFAULT_API_URL,
    AccessTokenSource,
    admin_api_client,
    get_service,
    google_access_token,
)
from verify.promote.coldstart_gate import gate_for_stack
from verify.promote.gates import BenchGate, CommandGates, Gates
from verify.promote.gke import GkePromotion, TrackShifter, gke_rollout, is_gke
from verify.promote.machine import Promotion
from verify.promote.metric_gate import required_metrics
from verify.promote.outputs import rollout_outputs
from verify.promote.shifter import TrafficShifter
from verify.pulumi_gateway import (
    AutomationGateway,
    PulumiAutomationShifter,
    PulumiTrackShifter,
    StackOutputsReader,
    StackReading,
    missing_cli_message,
    pulumi_project_dir,
)
from verify.target import normalise_base_url, target_from_outputs, with_flag_overrides
from verify.target.cli import add_target_arguments, target_options, timeout_options

DEFAULT_WAIT_S = 1800.0
# Without the Pulumi CLI: promote reads the stack's state and moves traffic with `pulumi up` (no --url form).
WITHOUT_PULUMI = missing_cli_message(
    "--stack needs", "(promote reads the stack's state and moves its traffic with `pulumi up`: it has no --url form)"
)
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
        "--bench-requests", type=positive_int("--bench-requests"), default=BenchGate.requests, metavar="N"
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
    parser.set_defaults(handler=run_promote_command)


@dataclass(frozen=True)
class Seams:
    """What tests replace: the Pulumi CLI, Google credentials and transports, the gates."""

    # Reads the stack's outputs (default: the Automation API gateway, without --url advice: promote has none).
    pulumi: StackOutputsReader | None = None
    access_token: AccessTokenSource = google_access_token
    api_transport: httpx.BaseTransport | None = None
    shifter: TrafficShifter | None = None
    gates: Gates | None = None
    say: Callable[[str], None] | None = None
    # The cold-start gate; None: cloudRun.maxColdStartSeconds from the stack file (verify/promote/coldstart_gate.py).
    cold_start: Callable[[str], str | None] | None = None
    # A GKE fleet's `pulumi up` that moves users to a track (verify/promote/gke.py).
    track_shifter: TrackShifter | None = None


def run_promote_command(args: argparse.Namespace, seams: Seams | None = None) -> int:
    seams = seams or Seams()
    if args.stack is None:
        raise UsageError("promote moves a stack's traffic: name it with --stack NAME (--url cannot be promoted)")
    stack = str(args.stack)
    reading = (seams.pulumi or AutomationGateway(missing_cli=WITHOUT_PULUMI)).outputs(stack)
    if is_gke(reading.outputs):
        return _promote_gke(args, seams, stack, reading)
    outputs = rollout_outputs(stack, reading.outputs)
    gates = seams.gates or _command_gates(args, seams, stack, reading)
    shifter = seams.shifter or PulumiAutomationShifter(
        stack, work_dir=args.project_dir or pulumi_project_dir(), policy_packs=tuple(args.policy_pack)
    )
    api_url = normalise_base_url(args.cloud_run_api, flag="--cloud-run-api")
    with admin_api_client(base_url=api_url, token=seams.access_token, transport=seams.api_transport) as api:
        promotion = Promotion(
            stack=stack,
            outputs=outputs,
            read_service=lambda: get_service(api, outputs.cloud_run_service),
            gates=gates,
            shifter=shifter,
            say=seams.say or _say,
            steps=args.steps,
            wait_s=args.wait,
            cold_start=seams.cold_start or gate_for_stack(stack, outputs.cloud_run_service, args.project_dir),
        )
        code = promotion.rollback() if args.rollback else promotion.promote()
    if args.json:
        print(promotion.outcome.report(stack, code).model_dump_json(), flush=True)
    return code


def _command_gates(args: argparse.Namespace, seams: Seams, stack: str, reading: StackReading) -> CommandGates:
    """verify health, the metric gate and verify bench, as the flags configure them, against the stack's model;
    each report printed as the command prints it."""
    return CommandGates(
        stack_target=with_flag_overrides(target_from_outputs(stack, reading.outputs), target_options(args)),
        bench_gate=BenchGate(
            concurrency=tuple(args.bench_concurrency),
            context=tuple(args.bench_context),
            max_tokens=args.bench_max_tokens,
            requests=args.bench_requests,
            warmup=args.bench_warmup,
            slos=tuple(parse_slo(slo) for slo in args.slo),
            output_dir=args.bench_output_dir,
        ),
        api_key_env=args.api_key_env,
        timeouts=timeout_options(args),
        required_metrics=required_metrics(stack, reading.outputs.vllm_args or []),
        say=seams.say or _say,
        show_health=print_health,
        show_bench=_show_bench,
        waiting=waiting_printer,
    )


def _show_bench(report: BenchReport) -> None:
    show_bench_report(report, as_json=False, console=Console(stderr=True, soft_wrap=True))


def _listed(numbers: tuple[int, ...]) -> str:
    return ",".join(str(number) for number in numbers)


def _promote_gke(args: argparse.Namespace, seams: Seams, stack: str, reading: StackReading) -> int:
    """A gated GKE fleet: gate the candidate track, then make it serve (verify/promote/gke.py)."""
    if args.rollback:
        raise UsageError(
            "--rollback is for Cloud Run revisions: on GKE the old track takes the new template once it becomes the "
            "candidate; go back by reverting the template and promoting again"
        )
    promotion = GkePromotion(
        stack=stack,
        rollout=gke_rollout(stack, reading.outputs),
        gates=seams.gates or _command_gates(args, seams, stack, reading),
        shifter=seams.track_shifter
        or PulumiTrackShifter(
            stack, work_dir=args.project_dir or pulumi_project_dir(), policy_packs=tuple(args.policy_pack)
        ),
        say=seams.say or _say,
        wait_s=args.wait,
        candidate_url=normalise_base_url(args.candidate_url, flag="--candidate-url") if args.candidate_url else None,
    )
    code = promotion.promote()
    if args.json:
        print(promotion.outcome.report(stack, code).model_dump_json(), flush=True)
    return code


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


def _say(line: str) -> None:
    print(f"verify promote: {line}", file=sys.stderr, flush=True)
