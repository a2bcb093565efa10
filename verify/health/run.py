"""`verify health` as a function: ``run_health(target, options) -> HealthReport``.

The command's whole behaviour apart from flags and rendering: one client for the target (its credential
and timeouts), the checks in order (checks.py), the report. ``verify promote`` gates a candidate with it
and keeps the report; verify/health/cli.py maps flags onto ``HealthOptions`` and prints the report.
"""

from __future__ import annotations

import asyncio

from verify.auth import auth_advice
from verify.endpoint import Target
from verify.health.checks import run_checks
from verify.health.report import CheckOptions, HealthOptions, HealthReport, ProgressCallback
from verify.reach import Reach, endpoint_client


def check_options(target: Target, options: HealthOptions) -> CheckOptions:
    """What each check needs: the whole-request deadline and how to fix a refused credential."""
    return CheckOptions(
        wait_s=options.wait_s,
        max_tokens=options.max_tokens,
        deadline_s=options.timeouts.request_deadline_s(options.max_tokens),
        auth_help=auth_advice(target, api_key_env=options.api_key_env),
        quality=options.quality,
    )


def run_health(
    target: Target,
    options: HealthOptions,
    *,
    on_waiting: ProgressCallback | None = None,
    reach: Reach | None = None,
) -> HealthReport:
    """Run every check against ``target``; ``on_waiting`` hears each readiness poll that did not succeed yet.

    Raises ``UsageError`` (exit 2) before any request when the credential's source is missing. Runs its own
    event loop: from async code call it in a thread (``asyncio.to_thread``) or use ``run_checks``.
    """
    checks = check_options(target, options)

    async def checked() -> HealthReport:
        async with endpoint_client(target, options, reach) as client:
            return await run_checks(client, target, checks, on_waiting=on_waiting)

    return asyncio.run(checked())
