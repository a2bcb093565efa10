"""`verify preflight`, `status` and `logs` as functions: ``(stack, options) -> report``.

Each opens the Google client (``open_apis``: Application Default Credentials by default, a fake in tests),
runs the read-only work (verify/ops/preflight.py, status.py, logs.py) and turns "could not ask Google"
into the report that says so (exit 2), exactly as the commands do. verify/ops/cli.py maps flags onto
these options and renders; the MCP server can call the same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pydantic

from remote.google_auth import ADC_SETUP_COMMAND
from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError
from verify.ops.google import apis_from_environment
from verify.ops.logs import DEFAULT_LIMIT, LogsReport, run_logs, unreadable_report
from verify.ops.preflight import PreflightReport, run_preflight, unchecked_report
from verify.ops.readiness import probe_readiness
from verify.ops.stack import OpsStack
from verify.ops.status import Probe, StatusReport, run_status, unknown_report, watch_status, with_cold_start

# The Google client for one command; used as a context manager (closed when the command ends).
OpenApis = Callable[[], GoogleApis]
Now = Callable[[], datetime]

DEFAULT_WATCH_INTERVAL_S = 15.0
DEFAULT_WATCH_TIMEOUT_S = 3 * 3600.0  # a queued TPU can wait hours
DEFAULT_LOGS_SINCE_S = 3600


class StatusOptions(pydantic.BaseModel):
    """``verify status``: one look, or (``watch``) look every ``interval_s`` until ready, failed or ``timeout_s``."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    watch: bool = False
    interval_s: float = pydantic.Field(default=DEFAULT_WATCH_INTERVAL_S, gt=0)
    timeout_s: float = pydantic.Field(default=DEFAULT_WATCH_TIMEOUT_S, gt=0)


class LogsOptions(pydantic.BaseModel):
    """``verify logs``: how far back, errors (and recognised failures) only or all lines, at most how many."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    since_s: int = pydantic.Field(default=DEFAULT_LOGS_SINCE_S, gt=0)
    errors_only: bool = False
    limit: int = pydantic.Field(default=DEFAULT_LIMIT, ge=1)


def preflight(stack: OpsStack, *, open_apis: OpenApis = apis_from_environment) -> PreflightReport:
    """The project's APIs, permissions and quotas before `pulumi up`, ranked."""
    try:
        with open_apis() as apis:
            return run_preflight(stack, apis)
    except CannotCheckError as error:
        return unchecked_report(stack, str(error), ADC_SETUP_COMMAND)


def status(
    stack: OpsStack,
    options: StatusOptions,
    *,
    open_apis: OpenApis = apis_from_environment,
    probe: Probe | None = probe_readiness,
    on_change: Callable[[StatusReport], None] | None = None,
    now: Now = lambda: datetime.now(UTC),
) -> StatusReport:
    """The deployment's state with its newest cold start; ``on_change`` hears each new state while watching."""
    try:
        with open_apis() as apis:

            def look() -> StatusReport:
                return run_status(stack, apis, probe=probe, now=now)

            if options.watch:
                report = watch_status(
                    look, timeout_s=options.timeout_s, interval_s=options.interval_s, on_change=on_change
                )
            else:
                report = look()
            return with_cold_start(report, stack, apis, now=now)
    except CannotCheckError as error:
        return unknown_report(stack, str(error), ADC_SETUP_COMMAND)


def logs(
    stack: OpsStack,
    options: LogsOptions,
    *,
    open_apis: OpenApis = apis_from_environment,
    now: Now = lambda: datetime.now(UTC),
) -> LogsReport:
    """The vLLM container's recent lines, with known failures explained."""
    try:
        with open_apis() as apis:
            return run_logs(
                stack, apis, since_s=options.since_s, errors_only=options.errors_only, limit=options.limit, now=now
            )
    except CannotCheckError as error:
        return unreadable_report(stack, since_s=options.since_s, problem=str(error), fix=ADC_SETUP_COMMAND)
