"""`verify promote` as a function: ``run_promote(target, PromoteOptions) -> PromoteResult``.

Reads the stack's outputs, picks the platform's promotion (a Cloud Run revision, verify/promote/machine.py,
or a GKE track, verify/promote/gke.py), runs the gates (verify/promote/gates.py: verify health, the metric
gate, verify bench, as functions) and moves traffic only if they pass. What it returns is the verdict
``--json`` prints and every gate's result with its command's report; verify/promote/cli.py maps flags onto
the options, says the progress lines and prints.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from remote.google_client import TokenSource
from remote.text import escape_controls
from verify import UsageError
from verify.adapters.run import DeclaredAdapter, declared_adapters
from verify.bench.command import BenchReport
from verify.endpoint import TargetOptions, TimeoutOptions, normalise_base_url, target_from_outputs, with_flag_overrides
from verify.health.quality import QualityOptions, promised_by
from verify.health.report import HealthReport, ProgressCallback
from verify.promote.cloud_run import DEFAULT_API_URL, admin_api, get_service, google_tokens
from verify.promote.coldstart_gate import gate_for_stack
from verify.promote.gates import BenchGate, CommandGates, GateResult, Gates
from verify.promote.gke import GkePromotion, TrackShifter, gke_rollout, is_gke
from verify.promote.machine import Promotion, PromotionReport
from verify.promote.metric_gate import required_metrics
from verify.promote.outputs import rollout_outputs
from verify.pulumi_gateway import (
    AutomationGateway,
    PulumiAutomationShifter,
    PulumiTrackShifter,
    StackOutputsReader,
    StackReading,
    missing_cli_message,
    pulumi_project_dir,
)
from verify.traffic import TrafficShifter
from verify.url_guard import google_api_problem

DEFAULT_WAIT_S = 1800.0
# Without the Pulumi CLI: promote reads the stack's state and moves traffic with `pulumi up` (no --url form).
WITHOUT_PULUMI = missing_cli_message(
    "--stack needs", "(promote reads the stack's state and moves its traffic with `pulumi up`: it has no --url form)"
)


@dataclass(frozen=True)
class PromoteOptions:
    """What ``verify promote`` is asked to do (its flags, typed)."""

    rollback: bool = False
    # The candidate's share after each step, ending at 100 (a health check of the candidate between steps).
    steps: tuple[int, ...] = (100,)
    wait_s: float = DEFAULT_WAIT_S
    # The Pulumi project whose `pulumi up` moves traffic (None: $GEMMA_SERVING_ROOT, else this checkout).
    project_dir: Path | None = None
    policy_packs: tuple[str, ...] = ()
    # GKE gated fleets: the candidate Service's address when its internal one is not reachable from here.
    candidate_url: str | None = None
    cloud_run_api: str = DEFAULT_API_URL
    timeouts: TimeoutOptions = field(default_factory=TimeoutOptions)
    bench_gate: BenchGate = field(default_factory=BenchGate)
    # --quality: the quality gate with the health gate, plus what the stack's vllm args promise.
    quality: QualityOptions | None = None


def say_on_stderr(line: str) -> None:
    """The promotion's progress lines, as `verify promote` says them (a line may quote a server: escaped)."""
    print(f"verify promote: {escape_controls(line)}", file=sys.stderr, flush=True)


def _quiet(_report: object) -> None:
    """No rendering (a caller without a terminal keeps the reports instead)."""


@dataclass(frozen=True)
class Seams:
    """What tests replace (the Pulumi CLI, Google credentials and transports, the gates) and how the gates'
    reports are shown (promote's CLI passes the commands' own renderers)."""

    # Reads the stack's outputs (default: the Automation API gateway, without --url advice: promote has none).
    pulumi: StackOutputsReader | None = None
    # Google credentials for the Cloud Run Admin API (default: Application Default Credentials).
    tokens: TokenSource | None = None
    api_transport: httpx.BaseTransport | None = None
    shifter: TrafficShifter | None = None
    gates: Gates | None = None
    say: Callable[[str], None] = say_on_stderr
    # The cold-start gate; None: cloudRun.maxColdStartSeconds from the stack file (verify/promote/coldstart_gate.py).
    cold_start: Callable[[str], str | None] | None = None
    # A GKE fleet's `pulumi up` that moves users to a track (verify/promote/gke.py).
    track_shifter: TrackShifter | None = None
    show_health: Callable[[HealthReport], None] = _quiet
    show_bench: Callable[[BenchReport], None] = _quiet
    waiting: Callable[[], ProgressCallback] | None = None


@dataclass(frozen=True)
class PromoteResult:
    """How the promotion ended (what ``--json`` prints) and every gate it ran, with its command's report."""

    report: PromotionReport
    gates: tuple[GateResult, ...] = ()

    @property
    def exit_code(self) -> int:
        return self.report.exit_code


def run_promote(target: TargetOptions, options: PromoteOptions, seams: Seams | None = None) -> PromoteResult:
    """Gate the stack's candidate and move traffic to it (or roll back). ``target.stack`` names the stack; its
    model, auth, audience and API-key variable override what the stack exports, for the gates.

    Raises ``UsageError`` (exit 2) for what must be fixed first: no stack, unreadable outputs, a stack that is
    not gated, ``rollback`` on GKE, a candidate without an address.
    """
    seams = seams or Seams()
    if target.stack is None:
        raise UsageError("promote moves a stack's traffic: name it with --stack NAME (--url cannot be promoted)")
    stack = target.stack
    reading = (seams.pulumi or AutomationGateway(missing_cli=WITHOUT_PULUMI)).outputs(stack)
    if is_gke(reading.outputs):
        return _promote_gke(target, options, seams, stack, reading)
    outputs = rollout_outputs(stack, reading.outputs)
    gates = seams.gates or command_gates(target, options, seams, stack, reading)
    shifter = seams.shifter or PulumiAutomationShifter(
        stack, work_dir=_project_dir(options), policy_packs=options.policy_packs
    )
    api_url = normalise_base_url(options.cloud_run_api, flag="--cloud-run-api")
    # The Admin API client carries the user's Google access token: only Google's API (or a local fake) gets it.
    if (wrong := google_api_problem(api_url, flag="--cloud-run-api")) is not None:
        raise UsageError(wrong)
    tokens = seams.tokens or google_tokens()
    with admin_api(base_url=api_url, tokens=tokens, transport=seams.api_transport) as api:
        promotion = Promotion(
            stack=stack,
            outputs=outputs,
            read_service=lambda: get_service(api, outputs.cloud_run_service),
            gates=gates,
            shifter=shifter,
            say=seams.say,
            steps=options.steps,
            wait_s=options.wait_s,
            cold_start=seams.cold_start
            or gate_for_stack(stack, outputs.cloud_run_service, _project_dir(options), say=seams.say),
        )
        code = promotion.rollback() if options.rollback else promotion.promote()
    return PromoteResult(promotion.outcome.report(stack, code), tuple(promotion.outcome.gates))


def command_gates(
    target: TargetOptions, options: PromoteOptions, seams: Seams, stack: str, reading: StackReading
) -> CommandGates:
    """verify health, the metric gate and verify bench, as the options configure them, against the stack's model."""
    return CommandGates(
        stack_target=with_flag_overrides(target_from_outputs(stack, reading.outputs), target),
        bench_gate=options.bench_gate,
        api_key_env=target.api_key_env,
        timeouts=options.timeouts,
        required_metrics=required_metrics(stack, reading.outputs.vllm_args or []),
        adapters_declared=declared_in_stack_file(stack, _project_dir(options), say=seams.say),
        quality=None
        if options.quality is None
        else promised_by(reading.outputs.vllm_args or [], reading.outputs.max_model_len, options.quality),
        say=seams.say,
        show_health=seams.show_health,
        show_bench=seams.show_bench,
        waiting=seams.waiting,
    )


def declared_in_stack_file(stack: str, project_dir: Path, *, say: Callable[[str], None]) -> tuple[DeclaredAdapter, ...]:
    """The stack file's LoRA adapters, which the adapter gate checks; none (said) when the file cannot be read."""
    try:
        return tuple(declared_adapters(stack, root=project_dir).values())
    except (OSError, ValueError, UsageError) as exc:
        say(f"adapter gate: the stack file could not be read ({exc}); declared adapters are not checked")
        return ()


def _promote_gke(
    target: TargetOptions, options: PromoteOptions, seams: Seams, stack: str, reading: StackReading
) -> PromoteResult:
    """A gated GKE fleet: gate the candidate track, then make it serve (verify/promote/gke.py)."""
    if options.rollback:
        raise UsageError(
            "--rollback is for Cloud Run revisions: on GKE the old track takes the new template once it becomes the "
            "candidate; go back by reverting the template and promoting again"
        )
    candidate_url = options.candidate_url
    promotion = GkePromotion(
        stack=stack,
        rollout=gke_rollout(stack, reading.outputs),
        gates=seams.gates or command_gates(target, options, seams, stack, reading),
        shifter=seams.track_shifter
        or PulumiTrackShifter(stack, work_dir=_project_dir(options), policy_packs=options.policy_packs),
        say=seams.say,
        wait_s=options.wait_s,
        candidate_url=normalise_base_url(candidate_url, flag="--candidate-url") if candidate_url else None,
    )
    code = promotion.promote()
    return PromoteResult(promotion.outcome.report(stack, code), tuple(promotion.outcome.gates))


def _project_dir(options: PromoteOptions) -> Path:
    return options.project_dir or pulumi_project_dir()
