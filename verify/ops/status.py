"""`verify status`: what state is this stack's deployment in, from the platform's side, and why.

Cloud Run: the service (found by the labels every stack resource carries, since Pulumi auto-names it),
its ready condition, latest created vs latest ready revision, traffic, and for a failing revision its
condition's reason and message (Run Admin v2 services.list/get, revisions.list). TPU: the queued
resource's state (with Google's reason when it failed, and the time left before `pulumi up`'s deadline
while it waits) and the node's state and health (TPU v2 queuedResources.get, nodes.get). Then, when the
platform reports an endpoint, one `/health` poll: the readiness line of `verify health`.

`watch_status` polls until the rollout is ready or has failed (or `timeout_s` passes), reporting each
change; clock and sleep are injected so tests never wait.
"""

from __future__ import annotations

import enum
import ipaddress
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import assert_never

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError, parse_answer
from serving.naming import CANDIDATE_TAG
from serving.tpu_states import ENDED, FAILED, WAITING
from verify.ops.answers import (
    QueuedResourceState,
    RunCondition,
    RunRevision,
    RunService,
    RunTrafficStatus,
    TpuNode,
)
from verify.ops.coldstart import ColdStart, Line, measure, milestone_filter
from verify.ops.findings import EXIT_BLOCKED, EXIT_CANNOT_CHECK, EXIT_OK
from verify.ops.gke_status import GkeStatus, KubeConnect, gke_fleet_status, real_cluster
from verify.ops.google import parse_rfc3339
from verify.ops.live_state import Instances, Lifetime, cloud_run_instances, flex_start_lifetime
from verify.ops.logs import page_lines
from verify.ops.stack import CloudRunOpsStack, GkeOpsStack, HealthAuth, OpsStack, TpuOpsStack
from verify.ops.startup_metric import StartupLatency, startup_latency
from verify.ops.tpu_placement_status import (
    Found,
    PlacementStatus,
    find_requests,
    node_gone,
    placement_status,
    requeue_fix,
    suspended_reason,
    untracked_text,
)


class RolloutState(enum.StrEnum):
    READY = "ready"
    IN_PROGRESS = "in-progress"
    FAILED = "failed"
    NOT_DEPLOYED = "not-deployed"
    UNKNOWN = "unknown"  # could not ask (no credentials, API disabled or unreachable): exit 2


class Readiness(pydantic.BaseModel):
    """The readiness line of `verify health`: one `/health` poll against the endpoint."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    status: str  # verify.health.CheckStatus value
    summary: str


class CloudRunStatus(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    service: str
    url: str | None
    ready: str  # the terminal condition: state, then reason/message when not succeeded
    latest_created_revision: str | None
    latest_ready_revision: str | None
    traffic: list[str]
    # Gated rollouts (components/vllm_gpu_service.py): the newest revision's `candidate` tag and its URL.
    candidate_revision: str | None = None
    candidate_percent: int | None = None
    candidate_url: str | None = None
    failing_revision: str | None = None
    failing_reason: str | None = None
    failing_message: str | None = None
    min_instances: int | None = None
    max_instances: int | None = None

    @property
    def probe_url(self) -> str | None:
        """A gated candidate is probed on its own tag URL: the service URL still reaches the serving revision."""
        return self.candidate_url or self.url


class TpuStatus(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    queued_resource: str
    state: str
    reason: str | None = None
    deadline_left_s: float | None = None
    valid_until: str | None = None
    node_state: str | None = None
    node_health: str | None = None
    health_description: str | None = None
    endpoint: str | None = None
    # With tpu.placements: which one the request is in, the attempts before it, the time left over the list.
    placement: PlacementStatus | None = None
    # Requests of the stack in other placement zones: the provider keeps one, so no state tracks these.
    untracked: list[str] = pydantic.Field(default_factory=list)

    @property
    def probe_url(self) -> str | None:
        return self.endpoint


class StatusReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str
    project: str
    platform: str
    state: RolloutState
    summary: str
    fix: str | None = None
    cloud_run: CloudRunStatus | None = None
    tpu: TpuStatus | None = None
    gke: GkeStatus | None = None
    readiness: Readiness | None = None
    # The newest start's phases (verify/ops/coldstart.py), or why they could not be read.
    cold_start: ColdStart | None = None
    cold_start_problem: str | None = None
    # Cloud Run's own startup latency metric for that revision (verify/ops/startup_metric.py).
    startup_latency: StartupLatency | None = None
    timed_out: bool = False
    # verify/ops/live_state.py: Cloud Run's recent instance count; a flex-start node's end.
    instances: Instances | None = None
    lifetime: Lifetime | None = None

    @property
    def detail(self) -> CloudRunStatus | TpuStatus | GkeStatus | None:
        """The platform's own facts: at most one of `cloud_run` / `tpu` / `gke` is set, its stack's platform."""
        return self.cloud_run or self.tpu or self.gke

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 ready; 2 could not ask; 1 anything else (failed, not deployed, still rolling out)."""
        if self.state is RolloutState.READY and not self.timed_out:
            return EXIT_OK
        if self.state is RolloutState.UNKNOWN:
            return EXIT_CANNOT_CHECK
        return EXIT_BLOCKED


Probe = Callable[[str, HealthAuth], Readiness]  # (endpoint, how /health is reached) -> one readiness poll
Now = Callable[[], datetime]


def run_status(
    stack: OpsStack,
    apis: GoogleApis,
    *,
    probe: Probe | None = None,
    now: Now = lambda: datetime.now(UTC),
    kubernetes: KubeConnect | None = None,
) -> StatusReport:
    """One look at the stack's deployment (`kubernetes` connects to a GKE cluster; default: the real one)."""
    try:
        match stack:
            case CloudRunOpsStack():
                report = _cloud_run_status(stack, apis)
            case TpuOpsStack():
                report = _tpu_status(stack, apis, now)
            case GkeOpsStack():
                report = _gke_status(stack, apis, kubernetes or real_cluster(apis))
            case _ as unreachable:
                assert_never(unreachable)
    except GoogleApiError as error:
        return _unknown(stack, str(error), error.advice(stack.project))
    except CannotCheckError as error:
        return _unknown(stack, str(error), None)
    report = report.model_copy(update=_live_state(stack, apis, report, now))
    endpoint = report.detail.probe_url if report.detail is not None else None
    if probe is not None and endpoint and report.state is RolloutState.READY:
        report = report.model_copy(update={"readiness": probe(endpoint, stack.health_auth)})
    return report


def _live_state(stack: OpsStack, apis: GoogleApis, report: StatusReport, now: Now) -> dict[str, object]:
    """The instance count of a deployed Cloud Run service; the end of a running flex-start node."""
    if report.cloud_run is not None:
        return {"instances": cloud_run_instances(apis, stack.project, report.cloud_run.service, now=now)}
    if isinstance(stack, TpuOpsStack) and stack.flex_start_run_seconds and report.tpu and report.tpu.node_state:
        # With tpu.placements the node is where the request was granted (tpu_placement_status.py).
        placement = report.tpu.placement
        if placement is not None and placement.provisioning != "flex-start":
            return {}
        try:
            node = apis.get(
                "tpu", stack.names.tpu_node_path(stack.project, placement.zone if placement else stack.zone)
            )
        except (GoogleApiError, CannotCheckError):
            return {}
        return {"lifetime": flex_start_lifetime(node, stack.flex_start_run_seconds, now=now)}
    return {}


def _report(
    stack: OpsStack,
    *,
    state: RolloutState,
    summary: str,
    fix: str | None = None,
    cloud_run: CloudRunStatus | None = None,
    tpu: TpuStatus | None = None,
    gke: GkeStatus | None = None,
) -> StatusReport:
    return StatusReport(
        stack=stack.name,
        project=stack.project,
        platform=stack.platform,
        state=state,
        summary=summary,
        fix=fix,
        cloud_run=cloud_run,
        tpu=tpu,
        gke=gke,
    )


def unknown_report(stack: OpsStack, reason: str, fix: str | None) -> StatusReport:
    return _unknown(stack, reason, fix)


def _unknown(stack: OpsStack, reason: str, fix: str | None) -> StatusReport:
    return _report(stack, state=RolloutState.UNKNOWN, summary=reason, fix=fix)


def _gke_status(stack: GkeOpsStack, apis: GoogleApis, connect: KubeConnect) -> StatusReport:
    verdict = gke_fleet_status(stack, apis, connect)
    return _report(
        stack, state=RolloutState(verdict.state), summary=verdict.summary, fix=verdict.fix, gke=verdict.detail
    )


# --- Cloud Run -------------------------------------------------------------------------------------------


def find_service(stack: CloudRunOpsStack, apis: GoogleApis) -> RunService | None:
    """The stack's service: labelled managed-by/stack by deploy.py; its name starts with gemma-<stack>-vllm."""
    path = f"projects/{stack.project}/locations/{stack.region}/services"
    candidates = [parse_answer(RunService, item, "run") for item in apis.pages("run", path, "services")]
    for service in candidates:
        if all(service.labels.get(key) == value for key, value in stack.labels.items()):
            return service
    for service in candidates:
        if service.name.rsplit("/", 1)[-1].startswith(stack.base_name):
            return service
    return None


def _cloud_run_status(stack: CloudRunOpsStack, apis: GoogleApis) -> StatusReport:
    service = find_service(stack, apis)
    if service is None:
        return _report(
            stack,
            state=RolloutState.NOT_DEPLOYED,
            summary=f"no Cloud Run service of stack {stack.name} in {stack.region}",
            fix=f"pulumi up --stack {stack.name}",
        )
    short = service.name.rsplit("/", 1)[-1]
    terminal = service.terminal_condition
    latest_created = _short(service.latest_created_revision)
    latest_ready = _short(service.latest_ready_revision)
    failing = _failing_condition(apis, service.name, latest_created) if latest_created != latest_ready else None
    candidate = next((entry for entry in service.traffic_statuses if entry.tag == CANDIDATE_TAG), None)
    scaling, template_scaling = service.scaling, service.template.scaling
    status = CloudRunStatus(
        service=short,
        url=service.uri or None,
        ready=_condition_text(terminal),
        latest_created_revision=latest_created,
        latest_ready_revision=latest_ready,
        traffic=[_traffic_text(entry) for entry in service.traffic_statuses],
        candidate_revision=_short(candidate.revision) if candidate else None,
        candidate_percent=candidate.percent if candidate else None,
        candidate_url=candidate.uri or None if candidate else None,
        failing_revision=latest_created if failing else None,
        failing_reason=_reason(failing) if failing else None,
        failing_message=failing.message if failing else None,
        min_instances=_first_set(template_scaling.min_instance_count, scaling.min_instance_count),
        max_instances=_first_set(template_scaling.max_instance_count, scaling.max_instance_count),
    )
    if failing is not None or terminal.state == "CONDITION_FAILED":
        message = status.failing_message or terminal.message
        serving = f"; traffic stays on {latest_ready}" if latest_ready else ""
        return _report(
            stack,
            state=RolloutState.FAILED,
            summary=f"revision {latest_created} failed: {message}{serving}",
            fix=f"gemma-verify logs --stack {stack.name} --errors",
            cloud_run=status,
        )
    if terminal.state == "CONDITION_SUCCEEDED" and latest_created == latest_ready and not service.reconciling:
        if status.candidate_revision == latest_ready and (status.candidate_percent or 0) < 100:
            return _report(
                stack,
                state=RolloutState.READY,
                summary=f"candidate {latest_ready} is ready with {status.candidate_percent}% of the traffic "
                "(gated rollout)",
                fix=f"gemma-verify promote --stack {stack.name} (gates, then the traffic moves to it)",
                cloud_run=status,
            )
        return _report(
            stack, state=RolloutState.READY, summary=f"{short} serves revision {latest_ready}", cloud_run=status
        )
    return _report(
        stack,
        state=RolloutState.IN_PROGRESS,
        summary=f"rolling out {latest_created or 'a new revision'} (ready: {latest_ready or 'none yet'})",
        cloud_run=status,
    )


def _first_set(*values: int | None) -> int | None:
    return next((value for value in values if value is not None), None)


def _traffic_text(entry: RunTrafficStatus) -> str:
    tag = f" (tag {entry.tag})" if entry.tag else ""
    return f"{entry.percent}% {_short(entry.revision) or 'latest'}{tag}"


def _failing_condition(apis: GoogleApis, service: str, revision: str | None) -> RunCondition | None:
    if not revision:
        return None
    for item in apis.pages("run", f"{service}/revisions", "revisions"):
        found = parse_answer(RunRevision, item, "run")
        if _short(found.name) != revision:
            continue
        for condition in found.conditions:
            if condition.state == "CONDITION_FAILED":
                return condition
    return None


def _reason(condition: RunCondition) -> str:
    parts = [condition.type, condition.revision_reason or condition.reason]
    return " ".join(part for part in parts if part)


def _condition_text(condition: RunCondition) -> str:
    state = condition.state.removeprefix("CONDITION_").lower()
    if state == "succeeded":
        return "ready"
    return f"{state}: {condition.message}" if condition.message else state


def _short(name: str | None) -> str | None:
    return name.rsplit("/", 1)[-1] if name else None


# --- TPU -------------------------------------------------------------------------------------------------

# A request that will not become ACTIVE: it failed, or ended (serving/tpu_states.py).
_GONE = {FAILED, *ENDED}
_NODE_STARTING = {"CREATING", "STARTING", "RESTARTING", "REPAIRING", "REIMAGING", "UNHIDING"}


def _tpu_status(stack: TpuOpsStack, apis: GoogleApis, now: Now) -> StatusReport:
    # `pulumi up` works with one request at a time: the ACTIVE one, else the first placement's that has one
    # (where a retried `pulumi up` takes up). Any other request of the stack is one no state tracks.
    every = find_requests(stack, apis)
    current = next((item for item in every if item[2].state.state == "ACTIVE"), every[0] if every else None)
    extra = [item for item in every if item is not current]
    report = _tpu_request_status(stack, apis, now, current)
    if not extra:
        return report
    summary, fix = untracked_text(stack, extra)
    untracked = [stack.queued_resource_in(placement.zone) for _, placement, _ in extra]
    tpu = report.tpu.model_copy(update={"untracked": untracked}) if report.tpu is not None else None
    return report.model_copy(
        update={"summary": report.summary + summary, "fix": "; ".join(filter(None, (report.fix, fix))), "tpu": tpu}
    )


def _tpu_request_status(stack: TpuOpsStack, apis: GoogleApis, now: Now, found: Found | None) -> StatusReport:
    if found is None:
        zones = ", ".join(placement.zone for placement in stack.placement_list)
        return _report(
            stack,
            state=RolloutState.NOT_DEPLOYED,
            summary=f"no queued resource {stack.base_name} in {zones}",
            fix=f"pulumi up --stack {stack.name} (or, after a flex-start run ended: pulumi up --refresh)",
        )
    index, placement, queued = found
    # From here on the stack is read at the placement the request is in (tpu_placement_status.py).
    stack = stack.model_copy(
        update={"zone": placement.zone, "provisioning": placement.provisioning, "reservation": placement.reservation}
    )
    state_block = queued.state
    state = state_block.state
    valid_until = queued.queueing_policy.valid_until_time
    deadline_left = _deadline_left(queued.create_time, stack.active_deadline_seconds, now)
    status = TpuStatus(
        queued_resource=stack.base_name,
        state=state,
        deadline_left_s=deadline_left,
        valid_until=valid_until or None,
        placement=placement_status(stack, index, placement, queued, deadline_left),
    )
    where = f" ({status.placement.text()})" if status.placement else ""
    if state in WAITING:
        reason = _waiting_reason(state, stack)
        left = _left_text(deadline_left)
        return _report(
            stack,
            state=RolloutState.IN_PROGRESS,
            summary=f"queued resource {state}{where}: {reason}; {left}",
            fix=None if state != "WAITING_FOR_RESOURCES" else _other_zone_fix(stack),
            tpu=status.model_copy(update={"reason": reason}),
        )
    if state in _GONE:
        suspended = state in {"SUSPENDING", "SUSPENDED"}
        reason = (
            suspended_reason(state_block, stack.provisioning == "flex-start")
            if suspended
            else _ended_reason(state, state_block)
        )
        return _report(
            stack,
            state=RolloutState.FAILED,
            summary=f"queued resource {state}{where}: {reason}",
            fix=requeue_fix(stack) if suspended else _ended_fix(state, stack),
            tpu=status.model_copy(update={"reason": reason}),
        )
    if state != "ACTIVE":
        return _report(stack, state=RolloutState.IN_PROGRESS, summary=f"queued resource {state}", tpu=status)
    return _tpu_node_status(stack, apis, status)


def _tpu_node_status(stack: TpuOpsStack, apis: GoogleApis, status: TpuStatus) -> StatusReport:
    """The queued resource is ACTIVE: the node's state and health decide."""
    node = parse_answer(TpuNode, apis.get("tpu", stack.node_name), "tpu")
    node_state = node.state
    health = node.health
    status = status.model_copy(
        update={
            "node_state": node_state,
            "node_health": health or None,
            "health_description": node.health_description or None,
            "endpoint": _node_endpoint(node, stack),
        }
    )
    if node_state == "READY" and health in {"", "HEALTHY", "HEALTH_UNSPECIFIED"}:
        return _report(
            stack,
            state=RolloutState.READY,
            summary=f"node {stack.base_name} READY; vLLM answers about 10 minutes after boot",
            tpu=status,
        )
    if node_state in _NODE_STARTING:
        return _report(stack, state=RolloutState.IN_PROGRESS, summary=f"node {node_state}", tpu=status)
    detail = f" ({health}: {status.health_description})" if health and health != "HEALTHY" else ""
    gone = node_gone(node_state)
    if gone is not None:
        return _report(stack, state=RolloutState.FAILED, summary=gone, fix=requeue_fix(stack), tpu=status)
    return _report(
        stack,
        state=RolloutState.FAILED,
        summary=f"node {node_state}{detail}",
        fix=f"gemma-verify logs --stack {stack.name} --errors; a PREEMPTED spot node needs "
        f"`pulumi up --refresh --stack {stack.name}`",
        tpu=status,
    )


def _deadline_left(create_time: str, deadline_s: int, now: Now) -> float | None:
    if not create_time:
        return None
    try:
        created = datetime.fromisoformat(create_time.replace("Z", "+00:00"))
    except ValueError:
        return None
    if created.tzinfo is None:
        return None
    return (created + timedelta(seconds=deadline_s) - now()).total_seconds()


def _left_text(seconds: float | None) -> str:
    if seconds is None:
        return "created time unknown"
    if seconds <= 0:
        return "past tpu.activeDeadline: `pulumi up` gives up and withdraws the request"
    return f"{seconds / 60:.0f} min left before tpu.activeDeadline"


def _waiting_reason(state: str, stack: TpuOpsStack) -> str:
    if state == "WAITING_FOR_RESOURCES":
        return f"no {stack.accelerator_type} capacity for {stack.provisioning} in {stack.zone} yet"
    if state == "PROVISIONING":
        return "capacity found; the node is being created"
    return "the request is being validated"


def _other_zone_fix(stack: TpuOpsStack) -> str | None:
    others = [zone for zone in stack.candidate_zones if zone != stack.zone]
    if not others:
        return None
    return (
        f"keep waiting, or move the stack to {', '.join(others)} (gemma-serving:region and tpu.zone); "
        "gemma-verify preflight shows which zones offer it"
    )


def _ended_reason(state: str, state_block: QueuedResourceState) -> str:
    if state == "FAILED":
        return state_block.failed_data.error.message or "no reason given"
    return "the request is being deleted"


def _ended_fix(state: str, stack: TpuOpsStack) -> str:
    if state == "FAILED":
        others = ", ".join(zone for zone in stack.candidate_zones if zone != stack.zone)
        return (
            f"read the reason above; try another zone ({others}) "
            f"or run `pulumi up --refresh --stack {stack.name}` to queue again"
        )
    return f"pulumi up --refresh --stack {stack.name} queues a new request"


def _node_endpoint(node: TpuNode, stack: TpuOpsStack) -> str | None:
    if not node.network_endpoints:
        return None
    first = node.network_endpoints[0]
    address = first.access_config.external_ip if stack.public_endpoint else None
    address = address or first.ip_address
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None  # not an address: nothing to probe (Google gives IPs here)
    return f"http://{address}:{stack.port}"


# --- watching --------------------------------------------------------------------------------------------


def watch_status(
    look: Callable[[], StatusReport],
    *,
    timeout_s: float,
    interval_s: float,
    on_change: Callable[[StatusReport], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> StatusReport:
    """Look until ready, failed or unknown; `timed_out` when `timeout_s` passes first."""
    start = clock()
    last_summary: str | None = None
    while True:
        report = look()
        if on_change is not None and report.summary != last_summary:
            on_change(report)
        last_summary = report.summary
        if report.state in {RolloutState.READY, RolloutState.FAILED, RolloutState.UNKNOWN}:
            return report
        elapsed = clock() - start
        if elapsed >= timeout_s:
            return report.model_copy(update={"timed_out": True})
        sleep(min(interval_s, timeout_s - elapsed))


# --- cold start -------------------------------------------------------------------------------------------

# How far back `verify status` looks for the newest start's lines.
COLD_START_LOOKBACK_DAYS = 7


def with_cold_start(
    report: StatusReport, stack: OpsStack, apis: GoogleApis, *, now: Now = lambda: datetime.now(UTC)
) -> StatusReport:
    """The report with the newest start's phases (the latest created revision on Cloud Run; the node on TPU),
    and on Cloud Run the revision's startup latency as Cloud Monitoring has it.

    Both are best effort: a failure says why (`cold_start_problem`, the latency's note) and changes no exit code.
    """
    revision = report.cloud_run.latest_created_revision if report.cloud_run is not None else None
    if report.state in {RolloutState.NOT_DEPLOYED, RolloutState.UNKNOWN}:
        return report
    update: dict[str, object] = {}
    measured = None
    try:
        measured = cold_start_of(stack, apis, revision, now=now)
    except (GoogleApiError, CannotCheckError) as error:
        update["cold_start_problem"] = f"cold start not measured: {error}"
    else:
        if measured is None:
            update["cold_start_problem"] = "cold start not measured: no start's milestone lines in the logs"
        update["cold_start"] = measured
    if revision is not None:
        span = _span(measured)
        since = now() - timedelta(days=COLD_START_LOOKBACK_DAYS)
        update["startup_latency"] = startup_latency(apis, stack.project, revision, since=since, now=now, start=span)
    return report.model_copy(update=update)


def _span(measured: ColdStart | None) -> tuple[datetime, datetime] | None:
    """When the measured start began and ended, for the metric's points around it."""
    began = parse_rfc3339(measured.started_at) if measured is not None else None
    if measured is None or began is None:
        return None
    return began, began + timedelta(seconds=measured.total_s)


def cold_start_of(
    stack: OpsStack, apis: GoogleApis, revision: str | None, *, now: Now = lambda: datetime.now(UTC)
) -> ColdStart | None:
    """The newest start of `revision` (or of the stack's node) from Cloud Logging's milestone lines."""
    query = milestone_filter(stack.log_filter(now() - timedelta(days=COLD_START_LOOKBACK_DAYS)), revision)
    body = {
        "resourceNames": [f"projects/{stack.project}"],
        "filter": query,
        "orderBy": "timestamp asc",
        "pageSize": 1000,
    }
    lines = page_lines(apis.post("logging", "entries:list", body))
    planned = stack.weight_bytes if isinstance(stack, CloudRunOpsStack) else None
    return measure(
        [Line(timestamp=x.timestamp, source=x.source, text=x.text, log=x.log) for x in lines], planned_bytes=planned
    )
