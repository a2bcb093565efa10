"""`verify health`: does this endpoint really serve the intended model, and if not, why not.

The checks run in the order a user would debug by hand, each timed, each a ``CheckResult``:
readiness (readiness.py), then served models, version, chat, streamed chat and metrics (checks.py).
Modules, each with one job and imports in one direction (report <- diagnosis <- readiness <- checks
<- run <- console <- cli):

- report.py: the result models and options, data first;
- diagnosis.py: the likely cause of each kind of failure, in one place;
- readiness.py, checks.py: the checks;
- run.py: ``run_health(target, options) -> HealthReport``, the command as a function (promote's gate);
- console.py: the table, the JSON document and progress lines;
- cli.py: flags to ``HealthOptions``, the rendering and the exit code.

The names other code uses are importable from ``verify.health`` itself.
"""

from __future__ import annotations

from verify.health.checks import check_chat, check_chat_stream, check_metrics, check_models, check_version, run_checks
from verify.health.readiness import check_readiness
from verify.health.report import (
    CheckName,
    CheckOptions,
    CheckResult,
    CheckStatus,
    HealthOptions,
    HealthReport,
    TargetFacts,
    Waiting,
)
from verify.health.run import run_health

__all__ = [
    "CheckName",
    "CheckOptions",
    "CheckResult",
    "CheckStatus",
    "HealthOptions",
    "HealthReport",
    "TargetFacts",
    "Waiting",
    "check_chat",
    "check_chat_stream",
    "check_metrics",
    "check_models",
    "check_readiness",
    "check_version",
    "run_checks",
    "run_health",
]
