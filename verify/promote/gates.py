"""The gates a candidate passes before it takes traffic: `verify health`, then a short `verify bench`.

Why the subcommands themselves rather than a second implementation: the candidate must pass exactly
the checks a user runs by hand after a rollout (the same readiness polling, the same failure messages,
the same SLO judgement and result files), so a promotion's verdict reads like theirs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from verify.target import DEFAULT_API_KEY_ENV, AuthKind, Target


class Gates(Protocol):
    """Each gate returns the subcommand's exit code (0 pass, 1 a check or SLO failed, 2 unreachable)."""

    def health(self, url: str, *, wait_s: float) -> int: ...

    def bench(self, url: str, *, label: str) -> int: ...


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
    connect_timeout_s: float | None = None
    timeout_s: float | None = None
    # Each run gets its own results file, so promoting the same candidate again never meets an old one.
    clock: Callable[[], float] = field(default=time.time)

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
        if self.connect_timeout_s is not None:
            argv += ["--connect-timeout", f"{self.connect_timeout_s:g}"]
        if self.timeout_s is not None:
            argv += ["--timeout", f"{self.timeout_s:g}"]
        return argv

    @staticmethod
    def _run(argv: Sequence[str]) -> int:
        from verify.cli import main  # noqa: PLC0415 - verify.cli registers this package: import at call time

        return main(list(argv))
