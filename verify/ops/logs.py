"""`verify logs`: the vLLM container's recent lines from Cloud Logging, with known failures explained.

What is read (Logging v2 entries.list, newest first, then shown oldest first):
- Cloud Run stacks: the service's revisions (`cloud_run_revision`, the container's stdout/stderr and
  Cloud Run's system lines such as startup probe failures) and the stack's weight import jobs
  (`cloud_run_job` named `gemma-<stack>-import-*`, where Hugging Face 401/404 show up).
- TPU stacks: the container's output, which the startup script sends through Docker's gcplogs driver
  (log `gcplogs-docker-driver`, container `gemma-vllm`), and the startup script's own lines
  (`gemma-vllm-startup: ...`, forwarded by the guest agent).

`--errors` keeps the lines that matter: every recognised signature; vLLM's own ERROR/CRITICAL lines (its
level, read from the line, wins over Cloud Logging's severity, since vLLM writes every level to stderr);
other lines of severity ERROR or worse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic

from remote.google_client import MAX_PAGES, GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError, GoogleText, parse_answer
from remote.text import escape_controls
from serving.durations import duration_seconds
from verify.ops.findings import EXIT_BLOCKED, EXIT_CANNOT_CHECK, EXIT_OK
from verify.ops.signatures import SIGNATURES, match
from verify.ops.stack import OpsStack
from verify.redact import Redactor

DEFAULT_LIMIT = 500
# How far back `--since` may reach: Cloud Logging keeps the _Default bucket's entries 30 days unless the
# bucket's retentionDays says otherwise (LogBucket, logging v2 reference); 3650 days is the longest custom
# retention (not confirmed from a stored source, so it is only the cap, never a promise that lines exist).
MAX_SINCE_S = 3650 * 86400
_SEVERE = {"ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
# vLLM's log format (vllm/logger.py _FORMAT): "(<process> pid=N) LEVEL MM-DD HH:MM:SS [file:line] message".
_VLLM_LEVEL = re.compile(r"(?:^|\) )(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ")


class LogLine(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    timestamp: str
    severity: str
    source: str  # revision, job or container the line came from
    text: str
    signature: str | None = None
    # The log's short name (`run.googleapis.com%2Fvarlog%2Fsystem`, `...%2Fstdout`): who wrote the line.
    log: str = ""


class Diagnosis(pydantic.BaseModel):
    """One recognised failure: what it means and what to do, with how often and where it was seen."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    signature: str
    explanation: str
    fix: str
    source: str
    count: int
    first_seen: str
    example: str


class LogsReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str
    project: str
    platform: str
    since: str
    filter: str
    lines: list[LogLine]
    diagnoses: list[Diagnosis]
    problem: str | None = None
    fix: str | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """2 when the logs could not be read; 1 when a known failure was recognised; else 0."""
        if self.problem is not None:
            return EXIT_CANNOT_CHECK
        return EXIT_BLOCKED if self.diagnoses else EXIT_OK


def parse_since(value: str) -> int:
    """Seconds from `30m`, `1h`, `2d`, at most Cloud Logging's longest retention; ValueError naming the forms."""
    seconds = duration_seconds(value)
    if not seconds:
        raise ValueError(f"--since {value!r}: write a positive whole number with s, m, h or d (e.g. 30m, 1h, 2d)")
    if seconds > MAX_SINCE_S:
        raise ValueError(
            f"--since {value!r}: at most {MAX_SINCE_S // 86400}d, the longest Cloud Logging keeps entries "
            "(30d unless the log bucket's retention was raised)"
        )
    return seconds


class _Resource(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")

    labels: dict[str, GoogleText] = pydantic.Field(default_factory=dict)


class LogEntry(pydantic.BaseModel):
    """`LogEntry` (logging v2 discovery document), the fields a line is made of; any other shape is refused."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)

    timestamp: GoogleText = ""
    severity: GoogleText = "DEFAULT"
    log_name: GoogleText = pydantic.Field(default="", alias="logName")
    resource: _Resource = _Resource()
    text_payload: str | None = pydantic.Field(default=None, alias="textPayload")
    json_payload: dict[str, Any] | None = pydantic.Field(default=None, alias="jsonPayload")
    proto_payload: dict[str, Any] | None = pydantic.Field(default=None, alias="protoPayload")


class _EntriesPage(pydantic.BaseModel):
    """entries.list's answer: a page of entries and, when there is more, the token of the next page."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)

    entries: list[LogEntry] = pydantic.Field(default_factory=list)
    next_page_token: str | None = pydantic.Field(default=None, alias="nextPageToken")


def run_logs(
    stack: OpsStack,
    apis: GoogleApis,
    *,
    since_s: int = 3600,
    errors_only: bool = False,
    limit: int = DEFAULT_LIMIT,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    redactor: Redactor | None = None,
) -> LogsReport:
    """The newest `limit` lines since `since_s` ago, scrubbed of secrets (this process's own included)."""
    safe = redactor if redactor is not None else Redactor.from_environment()
    query = stack.log_filter(now() - timedelta(seconds=min(since_s, MAX_SINCE_S)))
    base = {
        "stack": stack.name,
        "project": stack.project,
        "platform": stack.platform,
        "since": f"{since_s}s",
        "filter": query,
    }
    try:
        entries = newest_entries(apis, stack.project, query, limit)
    except GoogleApiError as error:
        return LogsReport(**base, lines=[], diagnoses=[], problem=str(error), fix=_read_fix(error, stack.project))
    except CannotCheckError as error:
        return LogsReport(**base, lines=[], diagnoses=[], problem=str(error))
    lines = [_line(entry, safe) for entry in reversed(entries)]  # oldest first, as a log reads
    diagnoses = _diagnose(lines)
    if errors_only:
        lines = [line for line in lines if _is_error(line)]
    return LogsReport(**base, lines=lines, diagnoses=diagnoses)


def unreadable_report(stack: OpsStack, *, since_s: int, problem: str, fix: str | None) -> LogsReport:
    """The report when nothing could be read (no credentials)."""
    return LogsReport(
        stack=stack.name,
        project=stack.project,
        platform=stack.platform,
        since=f"{since_s}s",
        filter="",
        lines=[],
        diagnoses=[],
        problem=problem,
        fix=fix,
    )


def _read_fix(error: GoogleApiError, project: str) -> str:
    if error.permission_denied:
        return f"reading logs needs roles/logging.viewer on {project} (logging.logEntries.list)"
    return error.advice(project)


def newest_entries(apis: GoogleApis, project: str, query: str, limit: int) -> list[LogEntry]:
    """The newest `limit` entries, reading at most MAX_PAGES pages (empty pages with a token count too)."""
    entries: list[LogEntry] = []
    body: dict[str, Any] = {
        "resourceNames": [f"projects/{project}"],
        "filter": query,
        "orderBy": "timestamp desc",
        "pageSize": min(limit, 1000),
    }
    for _ in range(MAX_PAGES):
        page = parse_answer(_EntriesPage, apis.post("logging", "entries:list", body), "logging")
        entries += page.entries
        if not page.next_page_token or len(entries) >= limit:
            return entries[:limit]
        body = {**body, "pageToken": page.next_page_token}
    raise CannotCheckError(
        f"logging API gave {len(entries)} entries in {MAX_PAGES} pages and still had more; stopped reading "
        "(narrow --since)"
    )


def page_lines(answer: dict[str, Any], redactor: Redactor | None = None) -> list[LogLine]:
    """An entries.list answer's entries as lines, in its order, parsed and scrubbed as `verify logs` does."""
    safe = redactor if redactor is not None else Redactor.from_environment()
    return [_line(entry, safe) for entry in parse_answer(_EntriesPage, answer, "logging").entries]


def _line(entry: LogEntry, redactor: Redactor) -> LogLine:
    text = entry_text(entry)
    signature = match(text)
    return LogLine(
        timestamp=entry.timestamp,
        severity=entry.severity,
        source=entry_source(entry),
        text=redactor.text(text),
        signature=signature.id if signature else None,
        log=entry.log_name.rsplit("/", 1)[-1],
    )


def entry_text(entry: LogEntry) -> str:
    """The entry's message as Google gave it (scrubbed, escaped and cut by the caller)."""
    if entry.text_payload is not None:
        return entry.text_payload.rstrip("\n")
    payload = entry.json_payload
    if payload is not None:
        message = payload.get("message") or payload.get("data")
        if message is not None:
            return str(message).rstrip("\n")
        return json.dumps(payload, sort_keys=True)
    if entry.proto_payload is not None:
        status = entry.proto_payload.get("status")
        message = status.get("message") if isinstance(status, dict) else None
        return str(message or entry.proto_payload.get("methodName") or "")
    return ""


def entry_source(entry: LogEntry) -> str:
    """What wrote the entry: the Cloud Run revision or job, the container (GKE), or the TPU VM instance."""
    labels = entry.resource.labels
    for key in ("revision_name", "job_name"):
        if labels.get(key):
            return labels[key]
    container = (entry.json_payload or {}).get("container")
    if isinstance(container, dict):
        return escape_controls(str(container.get("name", ""))).lstrip("/")
    if labels.get("instance_id"):
        return labels["instance_id"]
    return entry.log_name.rsplit("/", 1)[-1]


def _is_error(line: LogLine) -> bool:
    """vLLM's own level wins over Cloud Logging's severity (stderr lines of every level may arrive as ERROR)."""
    if line.signature is not None:
        return True
    level = _VLLM_LEVEL.search(line.text)
    if level is not None:
        return level.group(1) in {"ERROR", "CRITICAL"}
    return line.severity in _SEVERE


def _diagnose(lines: list[LogLine]) -> list[Diagnosis]:
    by_id = {signature.id: signature for signature in SIGNATURES}
    seen: dict[str, list[LogLine]] = {}
    for line in lines:
        if line.signature is not None:
            seen.setdefault(line.signature, []).append(line)
    return [
        Diagnosis(
            signature=key,
            explanation=by_id[key].explanation,
            fix=by_id[key].fix,
            source=by_id[key].source,
            count=len(found),
            first_seen=found[0].timestamp,
            example=found[0].text[:300],
        )
        for key, found in seen.items()
    ]
