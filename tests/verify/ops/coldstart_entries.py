"""Cloud Logging entries from a recorded vLLM log (tests/verify/ops/fixtures/coldstart/README.md says how)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

COLDSTART = Path(__file__).parent / "fixtures" / "coldstart"
REVISION = "gemma-l4-vllm-3f2a1b7c9d"
_VLLM_TIME = re.compile(r" (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \[")
INSTANCE_START = "Starting new instance. Reason: DEPLOYMENT_ROLLOUT - Instance started because of a new revision."
PROBE_PASSED = 'STARTUP HTTP probe succeeded after 3 attempts for container "vllm" on path "/health".'


def _entry(when: datetime, text: str, revision: str, log: str = "run.googleapis.com%2Fstderr") -> dict[str, Any]:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "textPayload": text,
        "timestamp": stamp,
        "receiveTimestamp": stamp,
        "severity": "DEFAULT",
        "logName": f"projects/p1/logs/{log}",
        "resource": {"type": "cloud_run_revision", "labels": {"revision_name": revision, "location": "us-east4"}},
    }


def log_entries(
    name: str,
    *,
    revision: str = REVISION,
    instance_start_before_s: float | None = 15,
    probe_after_s: float | None = 5,
) -> list[dict[str, Any]]:
    """The log's lines as entries (oldest first), with Cloud Run's instance-start and probe lines around them."""
    lines = (COLDSTART / name).read_text(encoding="utf-8").splitlines()
    times = [_VLLM_TIME.search(line) for line in lines]
    first = next(found for found in times if found)
    when = datetime(2026, int(first[1]), int(first[2]), int(first[3]), int(first[4]), int(first[5]), tzinfo=UTC)
    entries = []
    if instance_start_before_s is not None:
        entries.append(
            _entry(
                when - timedelta(seconds=instance_start_before_s),
                INSTANCE_START,
                revision,
                "run.googleapis.com%2Fvarlog%2Fsystem",
            )
        )
    for line, found in zip(lines, times, strict=True):
        if found:
            when = datetime(2026, int(found[1]), int(found[2]), int(found[3]), int(found[4]), int(found[5]), tzinfo=UTC)
        if line.strip():
            entries.append(_entry(when, line, revision))
    if probe_after_s is not None:
        entries.append(
            _entry(
                when + timedelta(seconds=probe_after_s), PROBE_PASSED, revision, "run.googleapis.com%2Fvarlog%2Fsystem"
            )
        )
    return entries
