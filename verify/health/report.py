"""What a health run asked for and what it found: the data every other part of the package shares.

Data first: checks produce these models, console.py draws them, ``--json`` prints them as they are.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import pydantic

from verify.client import DEFAULT_READ_TIMEOUT_S
from verify.endpoint import EndpointOptions
from verify.health.quality import QualityOptions, QualityResult
from verify.streaming import default_deadline_s

Fact = str | int | float | bool | None

DEFAULT_WAIT_S = 900.0  # cold starts load a 12B model from GCS for minutes; a TPU compiles for ~10
DEFAULT_MAX_TOKENS = 32
HEALTH_PROMPT = "Say hello in one short sentence."


class CheckStatus(enum.StrEnum):
    PASS = "pass"  # noqa: S105 - a check outcome, not a password
    FAIL = "fail"  # the endpoint answered, but not as a healthy deployment would (exit 1)
    SKIPPED = "skipped"  # not run because an earlier check failed
    UNREACHABLE = "unreachable"  # never answered, or never became ready within --wait (exit 2)
    UNAUTHORISED = "unauthorised"  # 401/403, or no credential could be obtained (exit 2)


class CheckName(enum.StrEnum):
    READINESS = "readiness"
    MODELS = "models"
    VERSION = "version"
    CHAT = "chat"
    CHAT_STREAM = "chat-stream"
    METRICS = "metrics"


class CheckResult(pydantic.BaseModel):
    """One check's outcome. On failure ``expected``/``got``/``cause`` say what a user needs to act."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: CheckName
    status: CheckStatus
    duration_s: float
    summary: str
    facts: dict[str, Fact] = pydantic.Field(default_factory=dict)
    expected: str | None = None
    got: str | None = None
    cause: str | None = None


class TargetFacts(pydantic.BaseModel):
    """What was checked; never a credential."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    source: str
    auth: str
    model: str | None
    model_discovered: bool
    platform: str | None
    accelerator: str | None


class HealthReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    target: TargetFacts
    vllm_version: str | None
    checks: list[CheckResult]
    # The quality gate (verify/health/quality.py), when asked for: each check passed or what it saw instead.
    quality: list[QualityResult] = pydantic.Field(default_factory=list)

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 all passed; 2 unreachable or unauthorised (could not check); 1 a check failed."""
        statuses = {check.status for check in self.checks}
        if statuses & {CheckStatus.UNREACHABLE, CheckStatus.UNAUTHORISED}:
            return 2
        if CheckStatus.FAIL in statuses or any(not check.passed for check in self.quality):
            return 1
        return 0

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.exit_code == 0


class HealthOptions(EndpointOptions):
    """What ``verify health`` is asked to do (its flags, typed); ``run_health`` derives ``CheckOptions``."""

    wait_s: float = pydantic.Field(default=DEFAULT_WAIT_S, ge=0)
    max_tokens: int = pydantic.Field(default=DEFAULT_MAX_TOKENS, ge=1)
    # --quality: the quality gate's checks after the health checks (None: not run).
    quality: QualityOptions | None = None


@dataclass(frozen=True)
class CheckOptions:
    """How each check runs: what ``HealthOptions`` and the target work out to, plus the polling pace."""

    wait_s: float = DEFAULT_WAIT_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    prompt: str = HEALTH_PROMPT
    # The longest one request may take in all (the read timeout only bounds silence between chunks).
    deadline_s: float = default_deadline_s(DEFAULT_MAX_TOKENS, DEFAULT_READ_TIMEOUT_S)
    # One /health poll may hang while Cloud Run starts an instance; bound it and poll again.
    poll_timeout_s: float = 30.0
    first_backoff_s: float = 1.0
    max_backoff_s: float = 15.0
    backoff_factor: float = 1.6
    # How to fix a 401/403 for this target (names the API-key variable or the IAM role).
    auth_help: str = "the endpoint requires credentials"
    quality: QualityOptions | None = None


@dataclass(frozen=True)
class Waiting:
    """A readiness poll that did not succeed yet, for progress output."""

    elapsed_s: float
    wait_s: float
    observation: str


ProgressCallback = Callable[[Waiting], None]


def result(
    name: CheckName,
    status: CheckStatus,
    took: float,
    summary: str,
    *,
    facts: dict[str, Fact] | None = None,
    expected: str | None = None,
    got: str | None = None,
    cause: str | None = None,
) -> CheckResult:
    """A ``CheckResult`` with its duration rounded and never negative."""
    return CheckResult(
        name=name,
        status=status,
        duration_s=round(max(took, 0.0), 4),
        summary=summary,
        facts=facts or {},
        expected=expected,
        got=got,
        cause=cause,
    )


def skipped(name: CheckName, reason: str) -> CheckResult:
    return CheckResult(name=name, status=CheckStatus.SKIPPED, duration_s=0.0, summary=reason)


def unauthorised(name: CheckName, took: float, expected: str, got: str, cause: str) -> CheckResult:
    return result(name, CheckStatus.UNAUTHORISED, took, f"unauthorised: {got}", expected=expected, got=got, cause=cause)
