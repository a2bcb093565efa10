"""`verify preflight` against a fake of Google's APIs: every blocker a first `pulumi up` runs into."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import ROOT, STACKS, Project, ops_stack
from verify.ops import deploy_requirements
from verify.ops.findings import Finding, Verdict
from verify.ops.preflight import PreflightReport, run_preflight


def _now() -> datetime:
    return datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def preflight(fake: FakeGoogle, stack_name: str, project: Project | None = None) -> PreflightReport:
    (project or Project()).install(fake)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_preflight(ops_stack(stack_name), apis, now=_now)


def only(report: PreflightReport, verdict: Verdict) -> list[Finding]:
    return [finding for finding in report.findings if finding.verdict is verdict]


@pytest.mark.parametrize("stack", STACKS)
def test_all_clear_exits_0_and_checks_every_area(fake: FakeGoogle, stack: str) -> None:
    """A project that has everything passes, and the run covers APIs, permissions, quotas (and TPU zones)."""
    report = preflight(fake, stack)
    assert report.exit_code == 0, [f for f in report.findings if f.verdict is not Verdict.PASS]
    areas = {finding.area for finding in report.findings}
    assert {"apis", "permissions", "quota"} <= areas
    assert ("tpu-zone" in areas) == (stack == "tpu-v6e")
    apis = {finding.item for finding in report.findings if finding.area == "apis"}
    assert "run.googleapis.com" in apis
    assert ("tpu.googleapis.com" in apis) == (stack == "tpu-v6e")


@pytest.mark.parametrize("stack", STACKS)
def test_preflight_only_reads(fake: FakeGoogle, stack: str) -> None:
    """Nothing here may change a cloud resource: only GETs, and POST only to Google's read-only methods."""
    preflight(fake, stack)
    assert fake.seen
    for request in fake.seen:
        assert request.method in {"GET", "POST"}, request
        if request.method == "POST":
            assert request.path.endswith(":testIamPermissions"), request.path


def test_disabled_api_that_the_deployer_may_enable_is_not_a_blocker(fake: FakeGoogle) -> None:
    """`pulumi up` enables the stack's APIs itself: a disabled one only matters if the deployer may not."""
    report = preflight(fake, "l4", Project(disabled_apis={"run.googleapis.com"}))
    run = next(f for f in report.findings if f.item == "run.googleapis.com")
    assert run.verdict is Verdict.PASS
    assert "pulumi up` enables it" in run.detail


@pytest.mark.parametrize("stack", STACKS)
def test_disabled_api_without_enable_permission_blocks(fake: FakeGoogle, stack: str) -> None:
    """A disabled API that the deployer cannot enable fails `pulumi up` at its first step."""
    project = Project(
        disabled_apis={"secretmanager.googleapis.com"}, missing_permissions={deploy_requirements.ENABLE_APIS_PERMISSION}
    )
    report = preflight(fake, stack, project)
    assert report.exit_code == 1
    blocked = {f.item: f for f in only(report, Verdict.BLOCKER)}
    assert "gcloud services enable secretmanager.googleapis.com --project proj-1" in (
        blocked["secretmanager.googleapis.com"].fix or ""
    )
    assert "roles/serviceusage.serviceUsageAdmin" in (blocked[deploy_requirements.ENABLE_APIS_PERMISSION].fix or "")


@pytest.mark.parametrize(
    ("stack", "permission", "role"),
    [
        ("l4", "run.services.create", "roles/run.admin"),
        ("rtx6000", "iam.serviceAccounts.actAs", "roles/iam.serviceAccountUser"),
        ("tpu-v6e", "tpu.queuedresources.create", "roles/tpu.admin"),
        ("tpu-v6e", "compute.firewalls.create", "roles/compute.securityAdmin"),
    ],
)
def test_missing_permission_names_the_role_that_grants_it(
    fake: FakeGoogle, stack: str, permission: str, role: str
) -> None:
    """A deployer without one permission learns which predefined role to ask for."""
    report = preflight(fake, stack, Project(missing_permissions={permission}))
    assert report.exit_code == 1
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == permission
    assert role in (blocker.fix or "")


def test_l4_gpu_quota_used_up_blocks_with_limit_usage_and_need(fake: FakeGoogle) -> None:
    """3 L4s granted without zonal redundancy, 3 in use by other services: one more instance does not fit."""
    metric = "run.googleapis.com/nvidia_l4_gpu_allocation_no_zonal_redundancy"
    report = preflight(fake, "l4", Project(usage={(metric, "us-east4"): 3}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.area == "quota"
    assert "without zonal redundancy" in blocker.item
    assert (blocker.limit, blocker.usage, blocker.needed) == (3, 3, 1)
    assert deploy_requirements.CLOUD_RUN_GPU_QUOTA_URL in (blocker.fix or "")


def test_redeploying_does_not_count_the_stacks_own_service_against_it(fake: FakeGoogle) -> None:
    """Quota 3, 3 in use of which 1 is this stack's own running service: `pulumi up` replaces it, so it fits."""
    metric = "run.googleapis.com/nvidia_l4_gpu_allocation_no_zonal_redundancy"
    Project(usage={(metric, "us-east4"): 3}).install(fake)
    fake.route(
        "GET", r"/run/v2/projects/proj-1/locations/us-east4/services", {"services": [fixture("run_service_ready.json")]}
    )
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("l4"), apis, now=_now)
    assert report.exit_code == 0
    gpu = next(f for f in report.findings if f.item.startswith("nvidia-l4 GPUs"))
    assert (gpu.limit, gpu.usage, gpu.needed) == (3, 2, 1)


def test_gpu_quota_follows_the_zonal_redundancy_setting(fake: FakeGoogle) -> None:
    """With zonal redundancy on, the service draws on the other GPU quota, which projects rarely have."""
    redundant = ops_stack("l4").model_copy(update={"gpu_zonal_redundancy_disabled": False})
    Project().install(fake)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(redundant, apis, now=_now)
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == "nvidia-l4 GPUs (with zonal redundancy)"
    assert blocker.limit == 0


def test_rtx6000_without_gpu_quota_in_its_region_blocks(fake: FakeGoogle) -> None:
    """The RTX PRO 6000 quota exists only for us-central1 here; usage 1 of 1 leaves nothing."""
    metric = "run.googleapis.com/nvidia_rtx_pro_6000_gpu_allocation_no_zonal_redundancy"
    report = preflight(fake, "rtx6000", Project(usage={(metric, "us-central1"): 1}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.needed == 1
    assert blocker.usage == 1


def test_cloud_run_cpu_quota_below_cpu_times_max_instances_blocks(fake: FakeGoogle) -> None:
    """rtx6000 needs 21 vCPU per instance (vLLM's 20 and the metrics sidecar's 1); 190 of 200 in use leaves 10."""
    report = preflight(fake, "rtx6000", Project(usage={("run.googleapis.com/cpu_allocation", "us-central1"): 190}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == "CPU"
    assert (blocker.limit, blocker.usage, blocker.needed, blocker.unit) == (200, 190, 21, "vCPU")


def test_cloud_run_memory_quota_is_converted_from_its_unit(fake: FakeGoogle) -> None:
    """The memory quota is in bytes (400 GiB); 350 GiB in use leaves less than rtx6000's 81 GiB."""
    used = 350 * 2**30
    report = preflight(fake, "rtx6000", Project(usage={("run.googleapis.com/memory_allocation", "us-central1"): used}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == "memory"
    assert (blocker.limit, blocker.usage, blocker.needed, blocker.unit) == (400, 350, 81, "GiB")


def test_tpu_without_preemptible_v6e_quota_in_the_zone_blocks(fake: FakeGoogle) -> None:
    """Flex-start draws on preemptible v6e quota: 8 chips all in use means the request can only wait."""
    report = preflight(fake, "tpu-v6e", Project(usage={("tpu.googleapis.com/tpu_v6e_preemptible", "us-east5-a"): 8}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.area == "quota"
    assert "preemptible" in blocker.item
    assert (blocker.limit, blocker.usage, blocker.needed) == (8, 8, 1)


def test_tpu_zone_without_the_accelerator_names_zones_that_have_it(fake: FakeGoogle) -> None:
    """What users did zone by zone: preflight says the zone lacks v6e-1 and which flex-start zone has it."""
    report = preflight(fake, "tpu-v6e", Project(v6e_zones={"asia-northeast1-b"}))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == "v6e-1 in us-east5-a"
    assert "asia-northeast1-b" in blocker.detail
    assert "asia-northeast1-b" in (blocker.fix or "")


def test_tpu_zone_offered_nowhere_points_to_the_zone_list_that_exists(fake: FakeGoogle) -> None:
    """No candidate zone offers the slice: the fix names the file that lists v6e zones, and it exists."""
    report = preflight(fake, "tpu-v6e", Project(v6e_zones=set()))
    [blocker] = only(report, Verdict.BLOCKER)
    assert "no other candidate zone offers it" in blocker.detail
    named = re.search(r"the zones in (\S+)", blocker.fix or "")
    assert named is not None
    assert (ROOT / named.group(1)).is_file()


def test_tpu_zone_without_the_runtime_blocks(fake: FakeGoogle) -> None:
    """A zone that offers v6e but not the v2-alpha-tpuv6e runtime cannot boot the node."""
    report = preflight(fake, "tpu-v6e", Project(runtime_zones=set()))
    [blocker] = only(report, Verdict.BLOCKER)
    assert blocker.item == "runtime v2-alpha-tpuv6e in us-east5-a"


@pytest.mark.parametrize("stack", STACKS)
def test_quota_api_disabled_is_unchecked_with_the_enable_command(fake: FakeGoogle, stack: str) -> None:
    """403 SERVICE_DISABLED on Cloud Quotas: the quota rows say so and how to enable it; exit 2, not a crash."""
    Project().install(fake)
    fake.fail("GET", r"/cloudquotas/v1/.*", "error_service_disabled.json")
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack(stack), apis, now=_now)
    assert report.exit_code == 2
    [unchecked] = only(report, Verdict.UNCHECKED)
    assert unchecked.area == "quota"
    assert unchecked.fix == "enable it: gcloud services enable cloudquotas.googleapis.com --project proj-1"
    assert any(f.area == "permissions" and f.verdict is Verdict.PASS for f in report.findings)


def test_permission_denied_on_usage_is_unchecked_naming_the_permission(fake: FakeGoogle) -> None:
    """A deployer who may not read Monitoring gets 'unchecked' with the permission, and exit 2."""
    Project(usage={("run.googleapis.com/cpu_allocation", "us-east4"): 1}).install(fake)
    denied = fixture("error_permission_denied.json")
    denied["error"]["message"] = "Permission monitoring.timeSeries.list denied (or the resource may not exist)."
    denied["error"]["details"][0]["domain"] = "monitoring.googleapis.com"
    denied["error"]["details"][0]["metadata"]["permission"] = "monitoring.timeSeries.list"
    fake.route("GET", r"/monitoring/v3/.*", denied, status=403)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("l4"), apis, now=_now)
    assert report.exit_code == 2
    [unchecked] = only(report, Verdict.UNCHECKED)
    assert "PERMISSION_DENIED" in unchecked.detail
    assert "monitoring.timeSeries.list" in (unchecked.fix or "")  # the permission Google named in ErrorInfo


def test_unreachable_api_is_unchecked_not_a_traceback() -> None:
    """An API that cannot be reached at all leaves each section unchecked (exit 2) with the host named."""
    with GoogleApis(tokens, api_root="http://127.0.0.1:9") as apis:
        report = run_preflight(ops_stack("l4"), apis, now=_now)
    assert report.exit_code == 2
    assert all(f.verdict is Verdict.UNCHECKED for f in report.findings)
    assert "unreachable at 127.0.0.1:9" in report.findings[0].detail


def test_json_report_is_one_document_with_exit_code(fake: FakeGoogle) -> None:
    """`--json` consumers read findings and exit_code from one document."""
    report = preflight(fake, "tpu-v6e")
    document = json.loads(report.model_dump_json())
    assert document["exit_code"] == 0
    assert document["zone"] == "us-east5-a"
    assert {"area", "item", "verdict", "detail", "fix", "limit", "usage", "needed", "unit"} <= set(
        document["findings"][0]
    )
