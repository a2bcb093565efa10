"""`verify preflight` for every GKE example stack against the fakes: a node pool's accelerator quota is found and
compared, so the example a user copies passes preflight in a project that has the quota.

The Compute Engine GPU quotas are answered as Cloud Quotas lists them (fixtures/cloudquotas_compute.json; its
source in fixtures/README.md). The shapes added as data only (H200 on A3 Ultra, B200 on A4, TPU7x) are among them. A TPU
slice node pool draws on Compute Engine's regional TPU quotas too (the family quota keyed by `tpu_family`, and the
preemptible one per generation), not on the Cloud TPU API's, which only a TPU VM stack reads.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import FakeGoogle, tokens
from tests.verify.ops.scenarios import Project, ops_stack
from verify.ops.findings import Finding, Verdict
from verify.ops.preflight import PreflightReport, gke_quotas, run_preflight
from verify.ops.stack import GkeOpsStack

GKE_GPU_STACKS = ("gke-h100", "gke-h200", "gke-b200", "gke-l4x4", "gke-l4-adapters", "gke-l4x2-31b-nvfp4")
GKE_TPU_STACKS = ("gke-tpu-v6e", "gke-tpu-v7")
FAMILY_QUOTA = "TPUS-PER-TPU-FAMILY-per-project-region"


def _preflight(fake: FakeGoogle, stack: str | GkeOpsStack, project: Project | None = None) -> PreflightReport:
    (project or Project()).install(fake)
    settings = ops_stack(stack) if isinstance(stack, str) else stack
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_preflight(settings, apis, now=lambda: datetime(2026, 12, 2, tzinfo=UTC))


def _gke(stack: str, **changes: object) -> GkeOpsStack:
    settings = ops_stack(stack)
    assert isinstance(settings, GkeOpsStack)
    return settings.model_copy(update=changes)


def _quota(report: PreflightReport) -> Finding:
    [quota] = [finding for finding in report.findings if finding.area == "quota"]
    return quota


@pytest.mark.parametrize("stack", [*GKE_GPU_STACKS, *GKE_TPU_STACKS])
def test_a_gke_example_passes_preflight_in_a_project_with_its_quota(fake: FakeGoogle, stack: str) -> None:
    """Every GKE GPU example's quota row said "unchecked" (no Compute Engine quota answered), and the TPU examples
    read the Cloud TPU API's zonal quotas, which a GKE node pool does not draw on (TPU7x has none at all), so
    preflight could not tell a user whether the node pool would get its accelerators. With the quota Google lists,
    each passes (exit 0), and the quota row compares maxNodes x accelerators a node with the regional limit."""
    report = _preflight(fake, stack)
    assert report.exit_code == 0, [f for f in report.findings if f.verdict is not Verdict.PASS]
    settings = ops_stack(stack)
    assert isinstance(settings, GkeOpsStack)
    quota = _quota(report)
    assert quota.needed == settings.max_nodes * settings.accelerators_per_node
    assert quota.limit is not None
    assert quota.limit >= quota.needed


@pytest.mark.parametrize("stack", ["gke-h200", "gke-b200"])
def test_a_gpu_node_pool_without_room_in_its_regional_quota_blocks(fake: FakeGoogle, stack: str) -> None:
    """All 8 preemptible GPUs of the region in use: the one A3 Ultra or A4 node cannot start, and preflight says so
    with the limit, the usage, the need and where to ask, instead of letting `pulumi up` wait on a pending pod."""
    settings = ops_stack(stack)
    assert isinstance(settings, GkeOpsStack)
    [selector] = gke_quotas(settings.machine_type, settings.provisioning)
    assert selector.metric is not None
    metric = selector.metric
    report = _preflight(fake, stack, Project(usage={(metric, settings.region): 8}))
    [blocker] = [finding for finding in report.findings if finding.verdict is Verdict.BLOCKER]
    assert blocker.area == "quota"
    assert (blocker.limit, blocker.usage, blocker.needed) == (8, 8, 8)
    assert settings.region in (blocker.fix or "")


def test_a_tpu_node_pool_reads_compute_engine_quota_not_the_cloud_tpu_apis(fake: FakeGoogle) -> None:
    """A GKE TPU pool was checked against the Cloud TPU API's per-zone quota, which GKE does not draw on: a project
    with TPU API quota but no Compute Engine TPU quota passed preflight and then waited on a node that never came.
    The Spot v6e pool now reads the preemptible v6e quota in its region, all 8 of which are in use here."""
    report = _preflight(
        fake, "gke-tpu-v6e", Project(usage={("compute.googleapis.com/preemptible_tpu_v6e", "us-east5"): 8})
    )
    quota = _quota(report)
    assert quota.verdict is Verdict.BLOCKER
    assert (quota.limit, quota.usage, quota.needed) == (8, 8, 4)
    assert "PREEMPTIBLE-TPU-V6E-per-project-region in us-east5" in (quota.fix or "")


def test_an_on_demand_tpu_pool_reads_its_own_familys_value_of_the_shared_quota(fake: FakeGoogle) -> None:
    """TPUS-PER-TPU-FAMILY is one quota keyed by TPU family: an on-demand v6e pool must read CT6E's value, not
    another family's or the default. In us-east5 CT6E has 8 (the pool needs 4); in us-central1 only TPU7X is
    granted, so a v6e pool there meets the default of 0 and is told which family to ask for."""
    granted = _quota(_preflight(fake, _gke("gke-tpu-v6e", provisioning="on-demand")))
    assert granted.verdict is Verdict.PASS
    assert (granted.limit, granted.needed) == (8, 4)
    assert granted.detail.startswith("TPUs per TPU family")

    elsewhere = _quota(_preflight(fake, _gke("gke-tpu-v6e", provisioning="on-demand", region="us-central1")))
    assert elsewhere.verdict is Verdict.BLOCKER
    assert f"{FAMILY_QUOTA} (tpu_family CT6E) in us-central1" in (elsewhere.fix or "")


def test_a_flex_start_tpu_pool_falls_back_to_the_on_demand_quota(fake: FakeGoogle) -> None:
    """A flex-start node draws on preemptible quota, and on the standard quota where the project lacks preemptible
    room (Compute Engine's provisioning models page): a full preemptible v6e quota must not block a pool whose
    family quota has room, and preflight names the quota it found the room in."""
    usage = {("compute.googleapis.com/preemptible_tpu_v6e", "us-east5"): 8}
    quota = _quota(_preflight(fake, _gke("gke-tpu-v6e", provisioning="flex-start"), Project(usage=usage)))
    assert quota.verdict is Verdict.PASS
    assert quota.detail.startswith("TPUs per TPU family")


def test_a_tpu_pool_with_no_compute_engine_quota_at_all_blocks_and_says_what_it_looked_for(fake: FakeGoogle) -> None:
    """A project whose Compute Engine lists no TPU quota for the series: a blocker naming the quotas preflight
    looked for, so the user knows which to request, not a silent pass."""
    project = Project()
    project.install(fake)
    fake.route(
        "GET",
        r"/cloudquotas/v1/projects/proj-1/locations/global/services/compute\.googleapis\.com/quotaInfos",
        lambda _m, _q, _b: (200, {"quotaInfos": []}),
    )
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("gke-tpu-v7"), apis, now=lambda: datetime(2026, 12, 2, tzinfo=UTC))
    quota = _quota(report)
    assert quota.verdict is Verdict.BLOCKER
    assert "'Preemptible TPU slices tpu7x'" in quota.detail
