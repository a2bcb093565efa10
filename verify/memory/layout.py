"""vLLM's start-up memory lines from Cloud Logging, beside the planner's prediction for the same stack.

Which start-up: the lines are searched with the stack's own log filter (verify/ops/stack.py: the Cloud
Run service's revisions, or the TPU node's container) narrowed to the memory lines, newest first; the
newest line's source (the revision, or the node's container) is the start-up reported, and only its lines
are read. The error of each planned figure is (planned - measured) / measured.

Whose lines: the stack's log filter also matches its import jobs, and anyone allowed to write log entries
can label one with any revision. So the source is checked to be the stack's own (`source_problem`): on
Cloud Run a revision of the stack's service (its `revision_name` label, not a job), on a TPU node its vLLM
container in Docker's log, on GKE a container of the stack's cluster and namespace. `--save` refuses lines
whose source is not.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pydantic

from remote.google_client import GoogleApis
from serving.units import GIB
from stacks.loading import LoadedStack
from verify.memory.startup import SEARCH_TERMS, StartupMemory, parse_startup
from verify.ops.logs import LogEntry, entry_source, entry_text, newest_entries
from verify.ops.stack import CloudRunOpsStack, OpsStack, TpuOpsStack

MAX_LINES = 200


class Row(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    quantity: str
    unit: str
    planned: float | None
    measured: float | None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def error(self) -> float | None:
        """(planned - measured) / measured: +10% means the planner promised 10% more than vLLM found."""
        if self.planned is None or not self.measured:
            return None
        return (self.planned - self.measured) / self.measured


class MemoryLayout(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str
    accelerator: str
    checkpoint: str
    source: str | None  # the revision or node container the lines came from
    first_line_at: str | None
    measured: StartupMemory
    rows: list[Row]
    plan_note: str | None  # why there is no plan, or that it is already calibrated
    problem: str | None = None
    # Why the lines may not be the stack's own start-up (None: they are): `--save` refuses them.
    source_problem: str | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 lines found; 1 none found (not started yet, or too long ago); 2 logs unreadable."""
        if self.problem is not None:
            return 2
        return 0 if self.measured.lines else 1


def memory_query(stack: OpsStack, since: datetime.datetime) -> str:
    terms = " OR ".join(f'"{term}"' for term in SEARCH_TERMS)
    return f"{stack.log_filter(since)} AND ({terms})"


def read_startup(
    apis: GoogleApis, stack: OpsStack, since: datetime.datetime
) -> tuple[StartupMemory, str | None, str | None, str | None]:
    """The newest start-up's memory lines, the source they came from, the time of the first, and why the
    source may not be the stack's own (None when it is)."""
    entries: list[LogEntry] = newest_entries(apis, stack.project, memory_query(stack, since), MAX_LINES)
    if not entries:
        return StartupMemory(), None, None, None
    newest = entry_source(entries[0])
    own = [entry for entry in reversed(entries) if entry_source(entry) == newest]  # oldest first
    measured = parse_startup(entry_text(entry) for entry in own)
    return measured, newest, own[0].timestamp or None, source_problem(stack, own, newest)


def source_problem(stack: OpsStack, entries: list[LogEntry], source: str) -> str | None:
    """Why ``entries`` may not be the stack's own server start-up; None when they are (see the module)."""
    if isinstance(stack, CloudRunOpsStack):
        foreign = [e for e in entries if e.resource.labels.get("revision_name") != source]
        if foreign or not source.startswith(stack.base_name) or source.startswith(stack.import_job_prefix):
            return f"{source} is not a revision of the stack's service {stack.base_name}"
        return None
    if isinstance(stack, TpuOpsStack):
        if any(not e.log_name.endswith("/gcplogs-docker-driver") for e in entries):
            return f"lines of {source} are not in the node's Docker log (gcplogs-docker-driver)"
        return None
    where = {"cluster_name": stack.cluster, "namespace_name": stack.namespace}
    if any(any(e.resource.labels.get(key) != value for key, value in where.items()) for e in entries):
        return f"lines of {source} are not from a container of {stack.cluster}/{stack.namespace}"
    return None


def planned_rows(loaded: LoadedStack, measured: StartupMemory) -> tuple[list[Row], str | None]:
    settings, capacity = loaded.settings, loaded.capacity
    plan = capacity.plan
    note = None
    if plan is None:
        note = f"no plan: {capacity.unknown_reason}"
    elif any("(measured: " in line for line in capacity.assumptions):
        note = "the plan already uses a calibration record for this accelerator and checkpoint"

    def gib(value: int | None) -> float | None:
        return None if value is None else value / GIB

    rows = [
        Row(
            quantity="weights",
            unit="GiB",
            planned=gib(plan.weight_bytes) if plan else None,
            measured=measured.weights_gib,
        ),
        Row(
            quantity="available KV cache memory",
            unit="GiB",
            planned=gib(plan.kv_budget_bytes) if plan else None,
            measured=measured.available_kv_cache_gib,
        ),
        Row(
            quantity="KV cache size",
            unit="tokens",
            planned=plan.capacity_tokens if plan else None,
            measured=measured.kv_cache_tokens,
        ),
        Row(
            quantity=f"maximum concurrency at {settings.vllm.max_model_len:,} tokens",
            unit="x",
            planned=plan.max_concurrency if plan else None,
            measured=measured.max_concurrency,
        ),
    ]
    return rows, note


def memory_layout(
    apis: GoogleApis,
    stack: OpsStack,
    loaded: LoadedStack,
    *,
    since_s: int,
    now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
) -> MemoryLayout:
    measured, source, first, wrong_source = read_startup(apis, stack, now() - datetime.timedelta(seconds=since_s))
    settings = loaded.settings
    rows, note = planned_rows(loaded, measured)
    return MemoryLayout(
        stack=stack.name,
        accelerator=settings.accelerator,
        checkpoint=settings.model.path,
        source=source,
        first_line_at=first,
        measured=measured,
        rows=rows,
        plan_note=note,
        source_problem=wrong_source,
    )
