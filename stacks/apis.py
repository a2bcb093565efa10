"""The Google APIs a stack uses: one list, read by the program (which enables them) and by preflight.

Why here and not in `supply.py`: `verify preflight` must know the same list before anything is deployed,
and verify never imports the Pulumi program's modules; a plain fact in `stacks/` serves both.
"""

from __future__ import annotations

# APIs every stack uses: Cloud Storage (weights), IAM (service accounts), Artifact Registry (images),
# Secret Manager (tokens, keys), Cloud Run (GPU services and the import job).
BASE_APIS = (
    "artifactregistry.googleapis.com",
    "iam.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
)
# Further APIs per platform (a TPU node also needs Compute Engine for its network and firewall).
TPU_APIS = ("compute.googleapis.com", "tpu.googleapis.com")
# A GKE fleet: the cluster and node pools (container), their VMs (compute), Managed Prometheus (monitoring).
GKE_APIS = ("compute.googleapis.com", "container.googleapis.com", "monitoring.googleapis.com")
# Behind the inference gateway: the load balancer calls the endpoint picker as a Service Extension (GKE's
# "Deploy GKE Inference Gateway" page: enable the Compute Engine and Network Services APIs).
GKE_GATEWAY_APIS = ("networkservices.googleapis.com",)
