"""Facts preflight checks against: the permissions `pulumi up` uses, the role that grants each, quota names.

Sources:
- Permissions and roles: Google's IAM roles and permissions index
  (https://cloud.google.com/iam/docs/roles-permissions), for the roles docs/deploying.md
  lists; each permission is one `pulumi up` exercises when it creates the stack's resources.
- Cloud Run GPU quota metrics `run.googleapis.com/<gpu>_gpu_allocation[_no_zonal_redundancy]` (e.g.
  `run.googleapis.com/nvidia_l4_gpu_allocation_no_zonal_redundancy`, quota ID
  `NvidiaL4GpuAllocNoZonalRedundancyPerProjectRegion`) and the regional CPU / memory quota IDs
  `CpuAllocPerProjectRegion` / `MemAllocPerProjectRegion`: Cloud Run's GPU page
  (https://cloud.google.com/run/docs/configuring/services/gpu#request-quota) and the Cloud Quotas
  console, as they appear in deployments' quota listings (read 2026-11).
- TPU quota: per TPU version, on-demand and preemptible kinds, per zone
  (https://cloud.google.com/tpu/docs/quota); matched by name (the shapes table's quotaMatch words, such as
  `v6e`, and `preemptible`) because Google has renamed these quota IDs before.
- Usage: Cloud Quotas reports limits only; usage is Cloud Monitoring's
  `serviceruntime.googleapis.com/quota/allocation/usage` on the `consumer_quota` resource
  (https://cloud.google.com/docs/quotas/implement-common-use-cases).
"""

from __future__ import annotations

from dataclasses import dataclass

ENABLE_APIS_PERMISSION = "serviceusage.services.enable"


@dataclass(frozen=True)
class Permission:
    name: str
    role: str
    why: str


# What every stack's `pulumi up` does with the deployer's credentials.
BASE_PERMISSIONS: tuple[Permission, ...] = (
    Permission(ENABLE_APIS_PERMISSION, "roles/serviceusage.serviceUsageAdmin", "enables the stack's APIs"),
    Permission("iam.serviceAccounts.create", "roles/iam.serviceAccountAdmin", "creates the stack's identities"),
    Permission("iam.serviceAccounts.actAs", "roles/iam.serviceAccountUser", "runs the jobs/VM as those identities"),
    Permission("storage.buckets.create", "roles/storage.admin", "creates the model bucket"),
    Permission("storage.buckets.setIamPolicy", "roles/storage.admin", "grants the readers on the bucket"),
    Permission("storage.managedFolders.create", "roles/storage.admin", "one folder per imported checkpoint"),
    Permission("artifactregistry.repositories.create", "roles/artifactregistry.admin", "the Docker Hub mirror"),
    Permission("secretmanager.secrets.create", "roles/secretmanager.admin", "tokens and the TPU API key"),
    Permission("run.jobs.create", "roles/run.admin", "the weight import jobs"),
    Permission("run.jobs.run", "roles/run.admin", "runs the import on `pulumi up`"),
    # The stack's watch (stacks/monitoring.py; on unless monitoring.enabled is false).
    Permission("monitoring.dashboards.create", "roles/monitoring.dashboardEditor", "the stack's dashboard"),
    Permission("monitoring.alertPolicies.create", "roles/monitoring.alertPolicyEditor", "the stack's alert policies"),
)
CLOUD_RUN_PERMISSIONS: tuple[Permission, ...] = (
    Permission("run.services.create", "roles/run.admin", "the vLLM service"),
    Permission("run.services.setIamPolicy", "roles/run.admin", "grants roles/run.invoker to cloudRun.invokers"),
    Permission(
        "resourcemanager.projects.setIamPolicy",
        "roles/resourcemanager.projectIamAdmin",
        "grants the serving identity monitoring.metricWriter (its metrics sidecar)",
    ),
)
TPU_PERMISSIONS: tuple[Permission, ...] = (
    Permission("tpu.queuedresources.create", "roles/tpu.admin", "queues the TPU request"),
    Permission("compute.firewalls.create", "roles/compute.securityAdmin", "the IAP SSH and vLLM firewall rules"),
    Permission("compute.routers.create", "roles/compute.networkAdmin", "Cloud NAT for the internal-only node"),
    Permission(
        "artifactregistry.repositories.setIamPolicy", "roles/artifactregistry.admin", "lets the node pull the mirror"
    ),
    Permission(
        "resourcemanager.projects.setIamPolicy",
        "roles/resourcemanager.projectIamAdmin",
        "grants the node logWriter and metricWriter",
    ),
)

GKE_PERMISSIONS: tuple[Permission, ...] = (
    Permission("container.clusters.create", "roles/container.admin", "the Standard cluster"),
    Permission("container.clusters.get", "roles/container.admin", "reads the cluster for the workload"),
    Permission(
        "artifactregistry.repositories.setIamPolicy", "roles/artifactregistry.admin", "lets the nodes pull the mirror"
    ),
    Permission(
        "resourcemanager.projects.setIamPolicy", "roles/resourcemanager.projectIamAdmin", "grants the nodes' roles"
    ),
    Permission(
        "iam.serviceAccounts.setIamPolicy", "roles/iam.serviceAccountAdmin", "binds the pods' KSA (Workload Identity)"
    ),
    # The private cluster's egress (gke.cluster.cloudNat) and the fleet's Kubernetes objects, which GKE
    # authorizes through IAM as well as RBAC.
    Permission("compute.routers.create", "roles/compute.networkAdmin", "Cloud NAT for the private nodes"),
    Permission("container.clusters.connect", "roles/container.admin", "reaches the Kubernetes API at its DNS endpoint"),
    Permission("container.namespaces.create", "roles/container.admin", "the fleet's namespace (Kubernetes API)"),
    Permission(
        "container.networkPolicies.create", "roles/container.admin", "the fleet's NetworkPolicy (Kubernetes API)"
    ),
)

# Where to ask for more quota.
CLOUD_RUN_GPU_QUOTA_URL = "https://g.co/cloudrun/gpu-quota"
QUOTAS_CONSOLE_URL = "https://console.cloud.google.com/iam-admin/quotas?project={project}"

CLOUD_RUN_CPU_QUOTA_ID = "CpuAllocPerProjectRegion"
CLOUD_RUN_MEMORY_QUOTA_ID = "MemAllocPerProjectRegion"
QUOTA_USAGE_METRIC = "serviceruntime.googleapis.com/quota/allocation/usage"


def cloud_run_gpu_metric(gpu: str, *, zonal_redundancy_disabled: bool) -> str:
    """`nvidia-rtx-pro-6000` -> `run.googleapis.com/nvidia_rtx_pro_6000_gpu_allocation_no_zonal_redundancy`."""
    suffix = "_no_zonal_redundancy" if zonal_redundancy_disabled else ""
    return f"run.googleapis.com/{gpu.replace('-', '_')}_gpu_allocation{suffix}"


# Cloud Quotas `metricUnit` prefixes for memory quotas, in GiB.
_MEMORY_UNITS_GIB: dict[str, float] = {
    "By": 1 / 2**30,
    "kBy": 1e3 / 2**30,
    "KiBy": 1 / 2**20,
    "MBy": 1e6 / 2**30,
    "MiBy": 1 / 2**10,
    "GBy": 1e9 / 2**30,
    "GiBy": 1.0,
}


def memory_unit_gib(metric_unit: str) -> float | None:
    """GiB per unit of a quota whose unit reads e.g. `MiBy/{project}/{region}`; None if not a byte unit."""
    head = metric_unit.split("/", 1)[0].strip()
    return _MEMORY_UNITS_GIB.get(head)
