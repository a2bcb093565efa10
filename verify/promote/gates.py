"""The gates a candidate passes before it takes traffic: `verify health`, then a short `verify bench`.

Why the subcommands themselves rather than a second implementation: the candidate must pass exactly
the checks a user runs by hand after a rollout (the same readiness polling, the same failure messages,
the same SLO judgement and result files), so a promotion's verdict reads like theirs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from verify import UsageError
from verify.client import client_for
from verify.promote.metric_gate import missing_metrics
from verify.target import DEFAULT_API_KEY_ENV, AuthKind, Target, TimeoutOptions


class Gates(Protocol):
    """Each gate returns the subcommand's exit code (0 pass, 1 a check or SLO failed, 2 unreachable)."""

    def health(self, url: str, *, wait_s: float) -> int: ...

    def bench(self, url: str, *, label: str) -> int: ...

    def metrics(self, url: str) -> int: ...


@dataclass(frozen=True)
class BenchGate:
    """A short closed-loop run: enough requests to judge success rate and latency, not a capacity sweep."""

    concurrency: str = "1,4"
    context: str = "256"
    max_tokens: int = 64
    requests: int = 16
    warmup: int = 2
    slos: tuple[str, ...] = ()
    output_dir: Path = Path("bench-results")


@dataclass(frozen=True)
class CliGates:
    """Runs `python -m verify health|bench` in-process against a URL with the stack's model and credential.

    ``service_url`` is the audience of a Google ID token: Cloud Run accepts its service URL's token on a
    tagged revision URL.
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

    def health(self, url: str, *, wait_s: float) -> int:
        return self._run(["health", *self._common(url), "--wait", f"{wait_s:g}"])

    def bench(self, url: str, *, label: str) -> int:
        gate = self.bench_gate
        argv = [
            "bench",
            *self._common(url),
            "--concurrency",
            gate.concurrency,
            "--context",
            gate.context,
            "--max-tokens",
            str(gate.max_tokens),
            "--requests",
            str(gate.requests),
            "--warmup",
            str(gate.warmup),
            "--no-progress",
            "--output",
            str(gate.output_dir / f"{label}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(self.clock()))}.jsonl"),
        ]
        if self.stack_target.accelerator:
            argv += ["--accelerator", self.stack_target.accelerator]
        for slo in gate.slos:
            argv += ["--slo", slo]
        return self._run(argv)

    def metrics(self, url: str) -> int:
        """1 when the candidate's /metrics lacks a metric the stack watches (or answers none), else 0."""
        if not self.required_metrics:
            return 0
        try:
            text = asyncio.run(self._scrape(url))
        except (httpx.HTTPError, UsageError) as exc:
            self.say(f"could not read {url}/metrics: {exc}")
            return 2
        try:
            missing = missing_metrics(self.required_metrics, text)
        except ValueError as exc:
            self.say(f"{url}/metrics is not Prometheus text: {exc}")
            return 1
        if missing:
            self.say(
                f"the candidate's /metrics lacks {', '.join(sorted(missing))}, which the stack's dashboard or alerts "
                "read (a renamed vLLM metric? serving/data/vllm-0.32-metrics.json is the recorded list)"
            )
            return 1
        return 0

    async def _scrape(self, url: str) -> str:
        target = self.stack_target.model_copy(update={"base_url": url, "audience_url": self.stack_target.audience})
        async with client_for(target, api_key_env=self.api_key_env, timeouts=self.timeouts) as client:
            response = await client.get("/metrics")
            response.raise_for_status()
            return response.text

    def _common(self, url: str) -> list[str]:
        target = self.stack_target
        argv = ["--url", url]
        if target.model is not None:
            argv += ["--model", target.model]
        argv += ["--auth", target.auth_kind.value]
        if target.auth_kind is AuthKind.GOOGLE:
            argv += ["--audience", target.audience]
        if target.auth_kind is AuthKind.API_KEY:
            argv += ["--api-key-env", self.api_key_env or DEFAULT_API_KEY_ENV]
        argv += ["--connect-timeout", f"{self.timeouts.connect_s:g}", "--timeout", f"{self.timeouts.read_s:g}"]
        return argv

    @staticmethod
    def _run(argv: Sequence[str]) -> int:
        from verify.cli import main  # noqa: PLC0415 - verify.cli registers this package: import at call time

        return main(list(argv))
