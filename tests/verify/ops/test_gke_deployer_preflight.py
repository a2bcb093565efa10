"""`verify preflight` for a GKE fleet checks the deployer's roles before `pulumi up` meets them halfway.

A deployer without Compute Network Admin got a private cluster whose nodes could pull nothing (no Cloud
NAT), and one without the Kubernetes API rights got a cluster and a billing node pool, then a refused
namespace. Preflight asks testIamPermissions for every permission a GKE deploy uses and names the role
that grants a missing one; the accelerator quota for the node shape is checked in test_gke_status.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remote.google_client import GoogleApis
from tests.conftest import ROOT
from tests.verify.ops.google_fake import FakeGoogle, tokens
from tests.verify.ops.scenarios import Project, ops_stack
from verify.ops import deploy_requirements
from verify.ops.findings import Verdict
from verify.ops.preflight import PreflightReport, run_preflight

STACK = "gke-l4x4"
GKE_DEPLOY = {
    "container.clusters.create": "roles/container.admin",
    "container.clusters.connect": "roles/container.admin",
    "container.namespaces.create": "roles/container.admin",
    "container.networkPolicies.create": "roles/container.admin",
    "compute.routers.create": "roles/compute.networkAdmin",
    "resourcemanager.projects.setIamPolicy": "roles/resourcemanager.projectIamAdmin",
    "iam.serviceAccounts.actAs": "roles/iam.serviceAccountUser",
}


def _preflight(fake: FakeGoogle, project: Project) -> PreflightReport:
    project.install(fake)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_preflight(ops_stack(STACK), apis, now=lambda: datetime(2026, 11, 26, tzinfo=UTC))


def test_a_gke_stack_asks_for_every_permission_its_deploy_uses() -> None:
    asked = {permission.name: permission.role for permission in ops_stack(STACK).permissions}
    assert GKE_DEPLOY.items() <= asked.items()


@pytest.mark.parametrize("permission", sorted(GKE_DEPLOY))
def test_a_missing_gke_permission_blocks_and_names_its_role(fake: FakeGoogle, permission: str) -> None:
    report = _preflight(fake, Project(missing_permissions={permission}))
    assert report.exit_code == 1
    [blocker] = [f for f in report.findings if f.verdict is Verdict.BLOCKER and f.item == permission]
    assert GKE_DEPLOY[permission] in (blocker.fix or "")


def test_every_gke_deployer_role_is_listed_in_the_deploying_guide() -> None:
    """docs/deploying.md names the roles preflight asks for, so a deployer can ask for them at once."""
    guide = (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    roles = {
        permission.role for permission in deploy_requirements.BASE_PERMISSIONS + deploy_requirements.GKE_PERMISSIONS
    }
    assert [role for role in sorted(roles) if role not in guide] == []
