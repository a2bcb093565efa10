"""Every name a stack's resources get, and every name a reader of a deployed stack looks for.

Why one module: `deploy/` names the resources and `verify` and the MCP server find them again (a log
filter on the service name, the import run's URN, the candidate tag, the TPU container's log lines). When
each side spelt `gemma-<stack>` on its own, a rename on one side left the other looking for what no longer
existed, with no error, only an empty answer ("not deployed"). Here each name is written once; a test
checks that every name it yields for a shipped stack appears in that stack's plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The tag a gated rollout gives the newest Cloud Run revision; its URL is https://candidate---<service host>.
CANDIDATE_TAG = "candidate"
# vLLM's container in the Cloud Run service (the one the GPU attaches to).
GPU_SERVING_CONTAINER = "vllm"
# vLLM's container on the TPU VM, started by the node's startup script.
TPU_SERVING_CONTAINER = "gemma-vllm"
# The prefix of the TPU startup script's own log lines (what `verify logs` filters on).
TPU_STARTUP_LOG_PREFIX = "gemma-vllm-startup:"
# The containers of the weight-import job and of the load-generator job.
IMPORT_JOB_CONTAINER = "import"
BENCH_JOB_CONTAINER = "bench"
# The command that runs an import job once is named after the job's component plus this suffix.
IMPORT_RUN_SUFFIX = "-run"
# vLLM's container in each pod of a GKE fleet (what `verify status` reads the logs of).
GKE_SERVING_CONTAINER = "vllm"
# The label a GKE fleet's pods carry with the Deployment's name as its value (`app=<deployment>`): the
# Service, the HPA and `verify status` select the pods by it.
GKE_APP_LABEL = "app"
# The metrics collector's container beside vLLM on a TPU node.
TPU_COLLECTOR_CONTAINER = "gemma-collector"
# The TPU collector's scrape job for vLLM's /metrics (Managed Prometheus's `job` label on those series).
TPU_SCRAPE_JOB = "vllm"
# The metrics collector's container beside vLLM in a Cloud Run service (Google's run-gmp sidecar).
CLOUD_RUN_COLLECTOR_CONTAINER = "collector"
# The name of the RunMonitoring config that sidecar reads (what it scrapes: vLLM's port).
RUN_MONITORING_NAME = "gemma-vllm"


# The labels every resource of a stack carries, so costs, ownership and `verify status` find it (Pulumi
# auto-names the Cloud Run service, so status looks it up by these).
MANAGED_BY = "gemma-serving"


def label_value(value: str) -> str:
    """A Google label value: lowercase letters, digits, '-' and '_', at most 63 characters."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in value.lower())[:63]


def stack_labels(stack: str) -> dict[str, str]:
    return {"managed-by": MANAGED_BY, "stack": label_value(stack)}


class TypeToken:
    """The `gemma:<module>:<Type>` token of each component, as Pulumi records it in URNs."""

    PROJECT_APIS = "gemma:project:ProjectApis"
    SERVING_IDENTITY = "gemma:iam:ServingIdentity"
    MODEL_BUCKET = "gemma:storage:ModelBucket"
    MODEL_IMPORT = "gemma:storage:ModelImport"
    IMPORT_IDENTITY = "gemma:storage:ImportIdentity"
    MANAGED_SECRET = "gemma:secrets:ManagedSecret"  # noqa: S105 - a type token, not a credential
    IMAGE_MIRROR = "gemma:registry:ImageMirror"
    DERIVED_IMAGE = "gemma:registry:DerivedImage"
    VLLM_GPU_SERVICE = "gemma:cloudrun:VllmGpuService"
    TPU_VLLM_NODE = "gemma:tpu:TpuVllmNode"
    BENCH_JOB = "gemma:verify:BenchJob"
    GKE_CLUSTER = "gemma:gke:GkeCluster"
    GKE_NODE_POOL = "gemma:gke:AcceleratorNodePool"
    GKE_NODE_IDENTITY = "gemma:gke:NodeIdentity"
    GKE_API_KEY = "gemma:gke:FleetApiKey"
    GKE_FLEET = "gemma:gke:VllmFleet"
    GKE_METRICS_ADAPTER = "gemma:gke:MetricsAdapter"
    GKE_INFERENCE_GATEWAY = "gemma:gke:InferenceGateway"
    SIDECAR_COLLECTION = "gemma:monitoring:SidecarCollection"
    STACK_WATCH = "gemma:monitoring:StackWatch"


@dataclass(frozen=True)
class StackNames:
    """The names one stack's resources get, from its stack name alone."""

    stack: str

    def display_name(self, what: str | None = None) -> str:
        """What Google's consoles show for one of the stack's things: `gemma-serving <stack>[ <what>]`."""
        return f"{MANAGED_BY} {self.stack}" + (f" {what}" if what else "")

    def display_title(self, title: str) -> str:
        """An alert policy's or channel's name, as alert mails show it: `gemma-serving <stack>: <title>`."""
        return f"{MANAGED_BY} {self.stack}: {title}"

    @property
    def base(self) -> str:
        """The prefix of every component name: `gemma-<stack>`."""
        return f"gemma-{self.stack}"

    @property
    def serving(self) -> str:
        """What serves: the Cloud Run service, or the TPU queued resource and its node (same id)."""
        return f"{self.base}-vllm"

    @property
    def sidecar_config_secret(self) -> str:
        """The Secret Manager secret holding a Cloud Run service's metrics-sidecar config (RunMonitoring)."""
        return f"{self.base}-run-gmp-config"

    @property
    def import_job_prefix(self) -> str:
        """Every weight-import job's name starts with this (`<prefix>-<role>`, role target or drafter)."""
        return f"{self.base}-import"

    def import_job(self, role: str) -> str:
        return f"{self.import_job_prefix}-{role}"

    def import_run(self, role: str) -> str:
        """The command resource that runs `role`'s import job once, as it appears at the end of its URN."""
        return f"{self.import_job(role)}{IMPORT_RUN_SUFFIX}"

    def import_role_of_run(self, resource_name: str) -> str | None:
        """The role whose import run `resource_name` is, or None when it is not one of this stack's."""
        prefix = f"{self.import_job_prefix}-"
        if not (resource_name.startswith(prefix) and resource_name.endswith(IMPORT_RUN_SUFFIX)):
            return None
        return resource_name[len(prefix) : -len(IMPORT_RUN_SUFFIX)] or None

    def account_id(self, role: str) -> str:
        """A valid service-account id for `role` (`gemma-<stack>-<role>`, cut to Google's 30 characters)."""
        slug = re.sub(r"[^a-z0-9-]+", "-", self.stack.lower()).strip("-") or "stack"
        suffix = f"-{role}"
        return f"gemma-{slug}"[: 30 - len(suffix)].rstrip("-") + suffix

    @property
    def bench_job(self) -> str:
        return f"{self.base}-bench"

    @property
    def bench_image(self) -> str:
        """The load generator's image, when the stack builds it (images/verify-bench)."""
        return f"{self.base}-bench-image"

    @property
    def bench_image_repository(self) -> str:
        """The standard Artifact Registry repository the built load-generator image is pushed to."""
        return f"{self.base}-bench-images"

    @property
    def identity(self) -> str:
        return f"{self.base}-identity"

    @property
    def model_bucket(self) -> str:
        return f"{self.base}-models"

    @property
    def hf_token_secret(self) -> str:
        return f"{self.base}-hf-token"

    @property
    def project_apis(self) -> str:
        return f"{self.base}-project"

    @property
    def image_mirror(self) -> str:
        return f"{self.base}-mirror"

    @property
    def mirror_repository(self) -> str:
        """The Artifact Registry remote repository that mirrors Docker Hub."""
        return f"{self.base}-dockerhub"

    @property
    def derived_image(self) -> str:
        return f"{self.base}-image"

    @property
    def image_repository(self) -> str:
        """The standard Artifact Registry repository a derived image is pushed to."""
        return f"{self.base}-images"

    @property
    def gke_cluster(self) -> str:
        """A GKE stack's cluster when the stack creates it (at most 40 characters, as GKE allows)."""
        return self.base[:40].rstrip("-")

    @property
    def gke_gateway(self) -> str:
        """The inference gateway's Gateway (components/gke/gateway_manifests.py names it the same way)."""
        return f"{self.serving}-gateway"

    def inference_pool(self, track: str | None = None) -> str:
        """The InferencePool over the fleet, or over one track of a gated fleet; its picker is `<pool>-epp`."""
        return self.serving if track is None else f"{self.serving}-{track}"

    @property
    def gke_api_key_secret(self) -> str:
        """The Secret Manager secret id of a GKE fleet's vLLM API key."""
        return f"{self.serving}-api-key"

    @staticmethod
    def gke_node_pool(machine_type: str) -> str:
        """The accelerator node pool's name: its machine type says what it holds."""
        return f"vllm-{machine_type}"

    def queued_resource_path(self, project: str, zone: str) -> str:
        """The TPU queued resource `pulumi up` created, as the TPU API names it."""
        return f"projects/{project}/locations/{zone}/queuedResources/{self.serving}"

    def tpu_node_path(self, project: str, zone: str) -> str:
        return f"projects/{project}/locations/{zone}/nodes/{self.serving}"

    @property
    def metrics(self) -> str:
        """A Cloud Run stack's metrics collection (the sidecar's config secret and its writer grant)."""
        return f"{self.base}-metrics"

    @property
    def watch(self) -> str:
        """The stack's alert policies, notification channels and dashboard."""
        return f"{self.base}-watch"

    @property
    def gke_nodes(self) -> str:
        """A GKE fleet's node identity (the node pool's service account and its grants)."""
        return f"{self.base}-nodes"

    @property
    def gke_api_key(self) -> str:
        """A GKE fleet's vLLM API key (its secret is `gke_api_key_secret`)."""
        return f"{self.base}-api-key"

    @property
    def gke_cluster_component(self) -> str:
        """The component that creates or adopts a GKE stack's cluster (the cluster's own name: `gke_cluster`)."""
        return f"{self.base}-cluster"

    @property
    def gke_metrics_adapter(self) -> str:
        """The component that serves vLLM's metrics to the HPA (the custom metrics adapter)."""
        return f"{self.base}-metrics-adapter"

    @property
    def gke_inference_gateway(self) -> str:
        """The inference gateway's component (its Gateway object is `gke_gateway`)."""
        return f"{self.base}-gateway"

    @property
    def gke_accelerators(self) -> str:
        """The component of a GKE fleet's accelerator node pool (the pool's own name: `gke_node_pool`)."""
        return f"{self.base}-accelerators"
