"""`verify preflight`: will `pulumi up` get what this stack needs? APIs, permissions, quotas, TPU zones.

Every call here reads (services:batchGet, testIamPermissions, quotaInfos.list, timeSeries.list,
acceleratorTypes.list, runtimeVersions.list); nothing is enabled, requested or created. A section whose
own API refuses (disabled, no access) becomes one `unchecked` finding with the fix, and the other
sections still run, so one run shows everything that can be known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import assert_never

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError, parse_answer
from serving.shapes import QuotaSelector, machine_family, shape
from verify.ops import deploy_requirements, tpu_availability
from verify.ops.answers import Permissions, ServicesBatch
from verify.ops.findings import Finding, Verdict, exit_code
from verify.ops.quotas import (
    Now,
    QuotaInfo,
    allocation_usage,
    compare,
    find_by_id,
    find_by_metric,
    find_selected,
    quota_infos,
)
from verify.ops.stack import CloudRunOpsStack, GkeOpsStack, OpsStack, TpuOpsStack
from verify.ops.status import find_service
from verify.ops.tpu_availability import TpuAvailability


class PreflightReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str
    project: str
    platform: str
    region: str
    zone: str | None
    accelerator: str
    findings: list[Finding]
    # TPU only: every v6e zone and tier for the stack's slice, ranked (verify/ops/tpu_availability.py).
    tpu_availability: TpuAvailability | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)


def run_preflight(stack: OpsStack, apis: GoogleApis, *, now: Now = lambda: datetime.now(UTC)) -> PreflightReport:
    """Every preflight check for one stack, in the order a user would fix them."""
    granted, permission_findings = _permissions(stack, apis)
    quotas, tpu = _quotas(stack, apis, now)
    findings = [*_apis(stack, apis, granted), *permission_findings, *quotas]
    return _report(stack, findings).model_copy(update={"tpu_availability": tpu})


def _quotas(stack: OpsStack, apis: GoogleApis, now: Now) -> tuple[list[Finding], TpuAvailability | None]:
    """Whether Google has room for this stack: the platform's own quotas (for a TPU, every zone and tier)."""
    match stack:
        case CloudRunOpsStack():
            return _cloud_run_quotas(stack, apis, now), None
        case TpuOpsStack():
            return tpu_availability.assess(stack, apis, now)
        case GkeOpsStack():
            return _gke_quota(stack, apis, now), None
        case _ as unreachable:
            assert_never(unreachable)


def unchecked_report(stack: OpsStack, reason: str, fix: str | None) -> PreflightReport:
    """The report when nothing could be asked (no credentials)."""
    finding = Finding(area="credentials", item="google", verdict=Verdict.UNCHECKED, detail=reason, fix=fix)
    return _report(stack, [finding])


def _report(stack: OpsStack, findings: list[Finding]) -> PreflightReport:
    return PreflightReport(
        stack=stack.name,
        project=stack.project,
        platform=stack.platform,
        region=stack.region,
        zone=stack.zone,
        accelerator=stack.accelerator,
        findings=findings,
    )


def _guarded(area: str, item: str, project: str, check: Callable[[], list[Finding]]) -> list[Finding]:
    """Run one section; an API that refuses or cannot be reached makes it `unchecked`, with the fix."""
    try:
        return check()
    except GoogleApiError as error:
        return [Finding(area=area, item=item, verdict=Verdict.UNCHECKED, detail=str(error), fix=error.advice(project))]
    except CannotCheckError as error:
        return [Finding(area=area, item=item, verdict=Verdict.UNCHECKED, detail=str(error))]


# --- permissions -----------------------------------------------------------------------------------------


def _permissions(stack: OpsStack, apis: GoogleApis) -> tuple[set[str] | None, list[Finding]]:
    wanted = stack.permissions
    granted: set[str] | None = None

    def check() -> list[Finding]:
        nonlocal granted
        answer = apis.post(
            "cloudresourcemanager",
            f"projects/{stack.project}:testIamPermissions",
            {"permissions": [permission.name for permission in wanted]},
        )
        granted = set(parse_answer(Permissions, answer, "cloudresourcemanager").permissions)
        missing = [permission for permission in wanted if permission.name not in granted]
        if not missing:
            return [
                Finding(
                    area="permissions",
                    item="deployer",
                    verdict=Verdict.PASS,
                    detail=f"all {len(wanted)} permissions `pulumi up` uses are granted",
                )
            ]
        return [
            Finding(
                area="permissions",
                item=permission.name,
                verdict=Verdict.BLOCKER,
                detail=f"missing ({permission.why})",
                fix=f"grant {permission.role}: gcloud projects add-iam-policy-binding {stack.project} "
                f"--member user:<you> --role {permission.role}",
            )
            for permission in missing
        ]

    findings = _guarded("permissions", "testIamPermissions", stack.project, check)
    return granted, findings


# --- APIs ------------------------------------------------------------------------------------------------


def _apis(stack: OpsStack, apis: GoogleApis, granted: set[str] | None) -> list[Finding]:
    def check() -> list[Finding]:
        names = [f"projects/{stack.project}/services/{api}" for api in stack.apis]
        answer = apis.get("serviceusage", f"projects/{stack.project}/services:batchGet", {"names": names})
        states = {
            service.name.rsplit("/", 1)[-1]: service.state
            for service in parse_answer(ServicesBatch, answer, "serviceusage").services
        }
        may_enable = granted is not None and deploy_requirements.ENABLE_APIS_PERMISSION in granted
        findings: list[Finding] = []
        for api in stack.apis:
            state = states.get(api, "unknown")
            if state == "ENABLED":
                findings.append(Finding(area="apis", item=api, verdict=Verdict.PASS, detail="enabled"))
            elif may_enable:
                findings.append(
                    Finding(
                        area="apis",
                        item=api,
                        verdict=Verdict.PASS,
                        detail=f"{state.lower()}; `pulumi up` enables it (you hold serviceusage.services.enable)",
                    )
                )
            elif granted is None:
                findings.append(
                    Finding(
                        area="apis",
                        item=api,
                        verdict=Verdict.UNCHECKED,
                        detail=f"{state.lower()}; whether you may enable it is unknown (permissions unchecked)",
                        fix=f"gcloud services enable {api} --project {stack.project}",
                    )
                )
            else:
                findings.append(
                    Finding(
                        area="apis",
                        item=api,
                        verdict=Verdict.BLOCKER,
                        detail=f"{state.lower()}, and you may not enable APIs",
                        fix=f"ask a project owner: gcloud services enable {api} --project {stack.project}, or grant "
                        "you roles/serviceusage.serviceUsageAdmin",
                    )
                )
        return findings

    return _guarded("apis", "services:batchGet", stack.project, check)


# --- quotas ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Need:
    """One Cloud Run quota the stack draws on, and how much of it one rollout needs."""

    item: str
    quota: QuotaInfo | None
    name: str  # the metric or quota ID looked for, for the "not found" row
    needed: float
    unit: str  # GPU, vCPU or GiB
    request_url: str


def _cloud_run_quotas(stack: CloudRunOpsStack, apis: GoogleApis, now: Now) -> list[Finding]:
    console = deploy_requirements.QUOTAS_CONSOLE_URL.format(project=stack.project)

    def check() -> list[Finding]:
        infos = quota_infos(apis, stack.project, "run.googleapis.com")
        own = _deployed_allocation(stack, apis)
        redundancy_off = stack.gpu_zonal_redundancy_disabled
        gpu_metric = deploy_requirements.cloud_run_gpu_metric(stack.gpu, zonal_redundancy_disabled=redundancy_off)
        redundancy = "without" if redundancy_off else "with"
        needs = (
            _Need(
                f"{stack.gpu} GPUs ({redundancy} zonal redundancy)",
                find_by_metric(infos, gpu_metric),
                gpu_metric,
                float(stack.max_instances),
                "GPU",
                deploy_requirements.CLOUD_RUN_GPU_QUOTA_URL,
            ),
            _Need(
                "CPU",
                find_by_id(infos, deploy_requirements.CLOUD_RUN_CPU_QUOTA_ID),
                deploy_requirements.CLOUD_RUN_CPU_QUOTA_ID,
                float(stack.cpu * stack.max_instances),
                "vCPU",
                console,
            ),
            _Need(
                "memory",
                find_by_id(infos, deploy_requirements.CLOUD_RUN_MEMORY_QUOTA_ID),
                deploy_requirements.CLOUD_RUN_MEMORY_QUOTA_ID,
                float(stack.memory_gib * stack.max_instances),
                "GiB",
                console,
            ),
        )
        return [_cloud_run_quota(stack, apis, need, own[need.unit], now) for need in needs]

    return _guarded("quota", "run.googleapis.com", stack.project, check)


def _cloud_run_quota(stack: CloudRunOpsStack, apis: GoogleApis, need: _Need, own: float, now: Now) -> Finding:
    region = stack.region
    if need.quota is None:
        return Finding(
            area="quota",
            item=need.item,
            verdict=Verdict.BLOCKER if need.unit == "GPU" else Verdict.UNCHECKED,
            detail=f"the project has no {need.name} quota for run.googleapis.com",
            fix=f"request it in {region}: {need.request_url}",
            needed=need.needed,
            unit=need.unit,
        )
    scale = 1.0
    if need.unit == "GiB":
        per_unit = deploy_requirements.memory_unit_gib(need.quota.metric_unit)
        if per_unit is None:
            return Finding(
                area="quota",
                item=need.item,
                verdict=Verdict.UNCHECKED,
                detail=f"{need.quota.label}: unit {need.quota.metric_unit!r} is not a byte unit",
            )
        scale = per_unit
    # A service this stack already runs is replaced, not added: its allocation is not a competitor.
    usage = max(allocation_usage(apis, stack.project, need.quota.metric, region, now) - own / scale, 0.0)
    return compare(
        need.quota,
        area="quota",
        item=need.item,
        location=region,
        needed=need.needed,
        usage=usage,
        unit=need.unit,
        scale=scale,
        request_url=need.request_url,
    )


def _deployed_allocation(stack: CloudRunOpsStack, apis: GoogleApis) -> dict[str, float]:
    """What the stack's existing service holds (GPU, vCPU, GiB x max instances); zero when there is none."""
    held = {"GPU": 0.0, "vCPU": 0.0, "GiB": 0.0}
    try:
        service = find_service(stack, apis)
    except (GoogleApiError, CannotCheckError):
        return held  # Run API disabled or unreadable: nothing deployed that we can see
    if service is None:
        return held
    template = service.template
    instances = float(template.scaling.max_instance_count or 0)
    limits = template.containers[0].resources.limits if template.containers else {}
    try:
        held["GPU"] = instances * float(limits.get("nvidia.com/gpu") or (1 if template.node_selector else 0))
        held["vCPU"] = instances * _cpu(limits.get("cpu") or "0")
        held["GiB"] = instances * _gib(limits.get("memory") or "0")
    except ValueError:
        raise CannotCheckError(f"run API gave limits that are not quantities: {limits}") from None
    return held


def _cpu(value: str) -> float:
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


_MEMORY_SUFFIX_GIB = {
    "Ki": 1 / 2**20,
    "Mi": 1 / 2**10,
    "Gi": 1.0,
    "Ti": 2**10,
    "K": 1e3 / 2**30,
    "M": 1e6 / 2**30,
    "G": 1e9 / 2**30,
}


def _gib(value: str) -> float:
    """Kubernetes quantities as Cloud Run writes memory limits (`32Gi`, `512Mi`)."""
    for suffix, factor in _MEMORY_SUFFIX_GIB.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value) / 2**30


# --- GKE -------------------------------------------------------------------------------------------------


def gke_quotas(machine_type: str, provisioning: str) -> tuple[QuotaSelector, ...]:
    """The Compute Engine quotas a GKE node pool draws on, GPU or TPU alike: its machine series' quotas for the
    provisioning model, from the shapes table, the first before its fallbacks. A TPU slice node pool draws on
    Compute Engine's regional TPU quotas, not the Cloud TPU API's (which a TPU VM stack reads per zone)."""
    family = machine_family(shape(machine_type))
    return family.quota.get(provisioning) or family.quota["spot"]


def _gke_quota(stack: GkeOpsStack, apis: GoogleApis, now: Now) -> list[Finding]:
    """Quota for the node pool's accelerators at full scale: maxNodes x accelerators per node. Where the first
    quota has no room, a fallback the provisioning model may draw on (flex-start: the on-demand quota) passes."""
    kind = "preemptible" if stack.preemptible else "on-demand"
    needed = float(stack.max_nodes * stack.accelerators_per_node)
    item = f"{stack.machine_type} accelerators ({kind}, {stack.max_nodes} node(s))"
    request_url = deploy_requirements.QUOTAS_CONSOLE_URL.format(project=stack.project)
    selectors = gke_quotas(stack.machine_type, stack.provisioning)

    def check() -> list[Finding]:
        infos = quota_infos(apis, stack.project, "compute.googleapis.com")
        findings = []
        for selector in selectors:
            info = find_selected(infos, selector)
            if info is None:
                continue
            # A quota keyed by a custom dimension (TPUS-PER-TPU-FAMILY) reports usage across every value of it:
            # what Monitoring labels a family's own usage with is unconfirmed, so this may overstate what is in use.
            usage = allocation_usage(apis, stack.project, info.metric, stack.region, now)
            finding = compare(
                info,
                area="quota",
                item=item,
                location=stack.region,
                needed=needed,
                usage=usage,
                unit="accelerators",
                request_url=request_url,
                dimensions=selector.dimensions,
            )
            if finding.verdict is Verdict.PASS:
                return [finding]
            findings.append(finding)
        if findings:
            return findings[:1]  # the quota the pool draws on first: where to ask
        wanted = " or ".join(selector.described for selector in selectors)
        return [
            Finding(
                area="quota",
                item=item,
                verdict=Verdict.BLOCKER,
                detail=f"no {kind} quota found for {stack.accelerator} in this project (looked for {wanted})",
                fix=f"request {kind} {stack.accelerator} quota in {stack.region}: {request_url}",
                needed=needed,
                unit="accelerators",
            )
        ]

    return _guarded("quota", "compute.googleapis.com", stack.project, check)
