"""The gates a candidate passes before it takes traffic: `verify health`, the metric gate, then a short
`verify bench`.

Why the commands' own functions rather than a second implementation: the candidate must pass exactly the
checks a user runs by hand after a rollout (the same readiness polling, the same failure messages, the
same SLO judgement and result files), so a promotion's verdict reads like theirs. Each gate calls the
typed function (``verify.health.run_health``, ``verify.bench.command.run_bench``) and keeps its report in
a ``GateResult``, whose ``failure`` names the check or SLO that failed; the refusal quotes it.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx
from rich.console import Console

from verify import UsageError
from verify.adapters.run import PROBE_MAX_TOKENS, DeclaredAdapter, probe_adapter
from verify.bench.command import BenchReport, run_bench
from verify.bench.options import BenchOptions, Gate, ServingFacts, Workload
from verify.bench.slo import Slo
from verify.endpoint import AuthKind, Target, TargetOptions, TimeoutOptions, resolve_target
from verify.health.quality import DEFAULT_MIN_AGREEMENT, QualityOptions, QualityResult, agreement
from verify.health.report import CheckStatus, HealthOptions, HealthReport, ProgressCallback
from verify.health.run import run_health
from verify.promote.metric_gate import missing_metrics
from verify.reach import client_for, endpoint_client

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2
EXIT_INTERRUPTED = 130


class GateName(enum.StrEnum):
    HEALTH = "health"
    METRICS = "metrics"
    ADAPTERS = "adapters"
    BENCH = "bench"


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict: its exit code as the command's (0 pass, 1 a check or SLO failed, 2 could not check,
    130 interrupted), what failed (the check, SLO or error, in the words a user reads; None when it passed)
    and the command's report (None when it could not run: a missing credential, an unusable output)."""

    gate: GateName
    exit_code: int
    failure: str | None = None
    report: HealthReport | BenchReport | None = None

    @property
    def passed(self) -> bool:
        return self.exit_code == EXIT_OK


class Gates(Protocol):
    """Each gate runs against one URL and returns its ``GateResult``."""

    def health(self, url: str, *, wait_s: float) -> GateResult: ...

    def bench(self, url: str, *, label: str) -> GateResult: ...

    def metrics(self, url: str) -> GateResult: ...

    def adapters(self, url: str) -> GateResult | None: ...


@dataclass(frozen=True)
class BenchGate:
    """A short closed-loop run: enough requests to judge success rate and latency, not a capacity sweep."""

    concurrency: tuple[int, ...] = (1, 4)
    context: tuple[int, ...] = (256,)
    max_tokens: int = 64
    requests: int = 16
    warmup: int = 2
    slos: tuple[Slo, ...] = ()
    output_dir: Path = Path("bench-results")


def _quiet(_report: object) -> None:
    """The default rendering: none (promote's CLI prints the tables a user reads; a tool keeps the reports)."""


@dataclass(frozen=True)
class CommandGates:
    """Runs verify health, the metric gate and verify bench against a URL with the stack's model and credential.

    The candidate is reached as ``verify health --url URL`` would reach it with the stack's model and auth kind;
    with Google auth the ID token's audience is the service URL (``stack_target.audience``): Cloud Run accepts
    the service URL's token on a tagged revision URL. ``show_health`` / ``show_bench`` render each report as the
    commands do (promote's CLI passes the commands' own renderers).
    """

    stack_target: Target
    bench_gate: BenchGate
    api_key_env: str | None = None
    timeouts: TimeoutOptions = field(default_factory=TimeoutOptions)
    # Each run gets its own results file, so promoting the same candidate again never meets an old one.
    clock: Callable[[], float] = field(default=time.time)
    # The vLLM metrics the stack's dashboard and alerts read (verify/promote/metric_gate.py); empty: no check.
    required_metrics: frozenset[str] = frozenset()
    say: Callable[[str], None] = print
    show_health: Callable[[HealthReport], None] = _quiet
    show_bench: Callable[[BenchReport], None] = _quiet
    # The stack's LoRA adapters: each must answer its probes as itself (verify/adapters/run.py); empty: no check.
    adapters_declared: tuple[DeclaredAdapter, ...] = ()
    # A fresh progress callback for each health run (readiness polls that did not succeed yet).
    waiting: Callable[[], ProgressCallback] | None = None
    console: Console = field(default_factory=lambda: Console(stderr=True, soft_wrap=True))
    # The quality gate run with the health gate (verify/health/quality.py); None: not run.
    quality: QualityOptions | None = None

    def candidate(self, url: str) -> Target:
        """The target the gates check: ``url`` with the stack's model, auth kind and token audience."""
        stack = self.stack_target
        return resolve_target(
            TargetOptions(
                url=url,
                model=stack.model,
                auth=stack.auth_kind,
                audience=stack.audience if stack.auth_kind is AuthKind.GOOGLE else None,
                api_key_env=self.api_key_env,
                # The candidate's URL is the stack's own (its tagged revision, or its own endpoint).
                allow_private_url=True,
            )
        )

    def health(self, url: str, *, wait_s: float) -> GateResult:
        options = HealthOptions(
            wait_s=wait_s, timeouts=self.timeouts, api_key_env=self.api_key_env, quality=self.quality
        )
        try:
            report = run_health(
                self.candidate(url), options, on_waiting=self.waiting() if self.waiting is not None else None
            )
        except UsageError as exc:
            return self._could_not(GateName.HEALTH, exc)
        except KeyboardInterrupt:
            return self._failed(GateName.HEALTH, EXIT_INTERRUPTED, "verify health: interrupted")
        report = self._with_agreement(report, self.candidate(url), options)
        self.show_health(report)
        return GateResult(GateName.HEALTH, report.exit_code, health_failure(report), report)

    def _with_agreement(self, report: HealthReport, candidate: Target, options: HealthOptions) -> HealthReport:
        """The quality gate's agreement check: the candidate against the revision serving now (the stack's URL)."""
        quality = self.quality
        model = report.target.model
        if quality is None or quality.min_agreement is None or model is None or report.exit_code == EXIT_UNUSABLE:
            return report
        if candidate.base_url == self.stack_target.base_url:
            return report  # nothing to compare with: the candidate is what serves

        async def compare() -> QualityResult:
            async with (
                endpoint_client(candidate, options) as ours,
                endpoint_client(self.stack_target, options) as theirs,
            ):
                return await agreement(ours, theirs, model, quality.min_agreement or DEFAULT_MIN_AGREEMENT)

        try:
            found = asyncio.run(compare())
        except UsageError as exc:
            found = QualityResult(
                name="agreement", passed=False, expected="the serving revision's answers", saw=str(exc), duration_s=0.0
            )
        return report.model_copy(update={"quality": [*report.quality, found]})

    def bench(self, url: str, *, label: str) -> GateResult:
        gate = self.bench_gate
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock()))
        options = BenchOptions(
            output=gate.output_dir / f"{label}-{stamp}.jsonl",
            workload=Workload(
                concurrency=gate.concurrency,
                context=gate.context,
                max_tokens=gate.max_tokens,
                requests=gate.requests,
                warmup=gate.warmup,
            ),
            timeouts=self.timeouts,
            api_key_env=self.api_key_env,
            progress=False,
            gate=Gate(slos=gate.slos),
            facts=ServingFacts(accelerator=self.stack_target.accelerator or None),
        )
        try:
            report = run_bench(self.candidate(url), options, console=self.console)
        except UsageError as exc:
            return self._could_not(GateName.BENCH, exc)
        try:
            self.show_bench(report)
        except UsageError as exc:
            self.say(f"verify bench: error: {exc}")
        return GateResult(GateName.BENCH, report.exit_code, bench_failure(report), report)

    def metrics(self, url: str) -> GateResult:
        """Fails when the candidate's /metrics lacks a metric the stack watches (or answers none)."""
        if not self.required_metrics:
            return GateResult(GateName.METRICS, EXIT_OK)
        try:
            text = asyncio.run(self._scrape(url))
        except (httpx.HTTPError, UsageError) as exc:
            return self._failed(GateName.METRICS, EXIT_UNUSABLE, f"could not read {url}/metrics: {exc}")
        try:
            missing = missing_metrics(self.required_metrics, text)
        except ValueError as exc:
            return self._failed(GateName.METRICS, EXIT_FAILED, f"{url}/metrics is not Prometheus text: {exc}")
        if missing:
            return self._failed(
                GateName.METRICS,
                EXIT_FAILED,
                f"the candidate's /metrics lacks {', '.join(sorted(missing))}, which the stack's dashboard or "
                "alerts read (a renamed vLLM metric? serving/data/vllm-0.32-metrics.json is the recorded list)",
            )
        return GateResult(GateName.METRICS, EXIT_OK)

    def adapters(self, url: str) -> GateResult | None:
        """None when the stack declares no adapter (nothing checked, nothing recorded). Fails when a declared
        adapter does not answer under its name, answers like the base, or misses what a
        probe expects: a new image or base revision can break adapters while the base model passes every gate."""
        if not self.adapters_declared:
            return None
        try:
            failures = asyncio.run(self._check_adapters(url))
        except (httpx.HTTPError, UsageError) as exc:
            return self._failed(GateName.ADAPTERS, EXIT_UNUSABLE, f"could not check the adapters at {url}: {exc}")
        if failures:
            return self._failed(GateName.ADAPTERS, EXIT_FAILED, "; ".join(failures))
        return GateResult(GateName.ADAPTERS, EXIT_OK)

    async def _check_adapters(self, url: str) -> list[str]:
        target = self.candidate(url)
        async with client_for(target, api_key_env=self.api_key_env, timeouts=self.timeouts) as client:
            base = target.model or ""
            reports = [
                await probe_adapter(client, adapter, base=base, max_tokens=PROBE_MAX_TOKENS)
                for adapter in self.adapters_declared
            ]
        return [f"adapter {report.adapter}: {problem}" for report in reports for problem in report.problems]

    async def _scrape(self, url: str) -> str:
        async with client_for(self.candidate(url), api_key_env=self.api_key_env, timeouts=self.timeouts) as client:
            response = await client.get("/metrics")
            response.raise_for_status()
            return response.text

    def _failed(self, gate: GateName, code: int, why: str) -> GateResult:
        self.say(why)
        return GateResult(gate, code, why)

    def _could_not(self, gate: GateName, exc: UsageError) -> GateResult:
        """The command would have stopped with exit 2 before checking anything (as `verify <gate>` does)."""
        return self._failed(gate, EXIT_UNUSABLE, f"verify {gate}: error: {exc}")


def health_failure(report: HealthReport) -> str | None:
    """The first check that did not pass, with its summary: what a refused promotion names."""
    for check in report.checks:
        if check.status not in {CheckStatus.PASS, CheckStatus.SKIPPED}:
            return f"the {check.name} check: {check.status}: {check.summary}"
    for quality in report.quality:
        if not quality.passed:
            return f"the quality check {quality.name}: expected {quality.expected}; saw {quality.saw}"
    return None


def bench_failure(report: BenchReport) -> str | None:
    """Why the bench gate failed: the cells or SLOs missed, the endpoint lost, or the interruption."""
    if report.interrupted:
        return "interrupted"
    if report.lost is not None:
        return report.lost
    if report.reports_error is not None:
        return report.reports_error
    return "; ".join(report.failures) or None
