"""A Cloud Run job that copies one checkpoint into the model bucket, with an identity that can do nothing else.

Why: weights were copied by hand from workstations, so nobody could say which revision a stack served
and a rebuilt project needed a person with a laptop. This job copies a Hugging Face repo at a pinned
commit (or a GCS prefix) into `<bucket>/<prefix>/`, in parallel, and is safe to run again: a completion
marker (`<prefix>/.gemma-import-complete.json`, holding source and revision) makes a re-run skip a
complete copy, and a partial one resumes (job_scripts/import_weights.py decides which).

Least privilege, per import:
- its own service account (a ServingIdentity of its own), not the serving containers' and not the default
  compute account;
- `roles/storage.objectUser` on a managed folder for its prefix only. objectCreator is too little: it
  cannot list (no resume), read the marker (no skip) or replace an object (a stale shard of an older
  revision would stay). objectAdmin is too much: it may also rewrite IAM on the folder. A managed folder
  scopes the grant to `<prefix>/`, so the drafter's import cannot touch the target's weights;
- `roles/secretmanager.secretAccessor` on the Hugging Face token secret only, and only for a Hugging
  Face source. The token reaches the container as an env var referencing Secret Manager, never as text.

How it runs: on `pulumi up`, a pulumi-command `local.Command` runs
`gcloud run jobs execute <job> --region <region> --project <project> --wait` on the deployer's machine,
again whenever the bucket, prefix, source, revision or selection changes (its triggers); the service
depends on it, so it rolls out only after the weights are there. By hand: the same command (exported
as `importJobs`). Cloud Run's native run-on-deploy token (`run_execution_token`) was not used: with the
provider as of 2026-09 an execution started by hand makes the next `pulumi up` re-send the token and
fail (GoogleCloudPlatform/magic-modules#19060).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.managed_secret import ACCESSOR_ROLE, ManagedSecret
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.wire import cloud_run_job, gcp
from components.wire.command import LocalCommand
from job_scripts import script_source
from serving.adapter_versions import version_folder_problem
from serving.gcp_names import COMMIT_ID, RFC1035_ID, SERVICE_ACCOUNT_ID, bucket_path_problem
from serving.lora_shapes import LayerShapes
from serving.naming import IMPORT_JOB_CONTAINER, IMPORT_RUN_SUFFIX, TypeToken

WRITER_ROLE = "roles/storage.objectUser"


def folder_writer_grants(
    name: str,
    *,
    bucket_name: pulumi.Input[str],
    folder: str,
    member: pulumi.Input[str],
    hf_token: ManagedSecret | None,
    project: str,
    child: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The managed folder `<folder>/`, the writer's grant on it and, given a token, its read grant.

    Why one function: an import's own account (ModelImport) and the account a stack's adapters share
    (ImportIdentity) must hold exactly the same boundary; two copies of these grants would drift apart.
    """
    managed_folder = gcp.ManagedFolder(
        f"{name}-folder",
        bucket=bucket_name,
        name=f"{folder}/",
        # Deleting the folder leaves its objects in place; the bucket's own settings decide their fate.
        force_destroy=True,
        opts=child,
    )
    grants: list[pulumi.Resource] = [
        gcp.ManagedFolderIamMember(
            f"{name}-writer",
            bucket=bucket_name,
            managed_folder=managed_folder.name,
            role=WRITER_ROLE,
            member=member,
            opts=child,
        )
    ]
    if hf_token is not None:
        grants.append(
            gcp.SecretIamMember(
                f"{name}-token-reader",
                project=project,
                secret_id=hf_token.secret_id,
                role=ACCESSOR_ROLE,
                member=member,
                opts=child,
            )
        )
    return grants


@dataclass(frozen=True)
class ImportJobSpec:
    """How the job runs: its parallelism, resources and limits, and whether `pulumi up` runs it."""

    # Files copied at once; each holds one chunk of `chunk_mib` in memory while it streams.
    workers: int
    chunk_mib: int
    cpu: int
    memory_gib: int
    # One attempt's limit; a retried attempt resumes where the last one stopped.
    timeout_minutes: int
    max_retries: int
    # Run the job from `pulumi up` (gcloud on the deployer's machine), so the server waits for the weights.
    run_on_up: bool = True


@dataclass(frozen=True)
class AdapterExpectation:
    """One version of a LoRA adapter as declared, which the job checks the source's adapter_config.json and
    safetensors headers against before it writes anything; the served model's path, which it writes as the
    config's base so that vLLM's filesystem resolver accepts the adapter (it compares base_model_name_or_path
    with the served model); and the model's adaptable modules per layer (None: not in the catalog)."""

    name: str
    version: str
    bases: tuple[str, ...]
    rank: int
    target_modules: tuple[str, ...]
    served_model_path: str
    shapes: LayerShapes | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "version": self.version,
                "bases": list(self.bases),
                "rank": self.rank,
                "targetModules": list(self.target_modules),
                "servedModelPath": self.served_model_path,
                **(self.shapes.to_json() if self.shapes is not None else {}),
            },
            sort_keys=True,
            separators=(",", ":"),
        )


@dataclass(frozen=True)
class ImportWriter:
    """An identity shared by several imports that already holds their folder's grant (components/
    import_identity.py): a job given one creates no account or grant of its own."""

    email: pulumi.Output[str]
    grants: tuple[pulumi.Resource, ...]
    # Whether it may read the Hugging Face token secret (granted once, for every import that shares it).
    reads_token: bool = False


@dataclass(frozen=True)
class ModelImportArgs:
    """One checkpoint to copy: from `source_uri` (at `revision`) into `<bucket>/<prefix>/`."""

    project: str
    region: str
    bucket_name: pulumi.Input[str]
    prefix: str
    # hf://owner/name or gs://bucket/path
    source_uri: str
    # The pinned commit for hf://; empty for gs:// (the job fingerprints the source listing instead).
    revision: str
    image: pulumi.Input[str]
    account_id: str
    job: ImportJobSpec
    # What the console shows for the import's account: serving/naming.py's, naming the stack and the role.
    display_name: str
    exclude: tuple[str, ...] = ()
    # The Hugging Face token secret; only a Hugging Face source is given access to it.
    hf_token: ManagedSecret | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    # Set for a LoRA adapter: the job checks and finalises its adapter_config.json (job_scripts/import_weights.py).
    adapter: AdapterExpectation | None = None
    # Set to run as an identity shared with other imports (a stack's adapters) instead of one of its own.
    writer: ImportWriter | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        if self.adapter is not None and version_folder_problem(self.prefix):
            problems.append(
                f"ModelImportArgs.prefix {self.prefix!r}: an adapter version's folder, adapters/NAME@VERSION"
            )
        elif self.adapter is None and bucket_path_problem(self.prefix):
            problems.append(f"ModelImportArgs.prefix {self.prefix!r}: a relative path inside the bucket")
        if self.from_hub:
            if not COMMIT_ID.match(self.revision):
                problems.append(f"ModelImportArgs.revision {self.revision!r}: a 40-hex commit id, never a branch")
        elif not self.source_uri.startswith("gs://"):
            problems.append(f"ModelImportArgs.source_uri {self.source_uri!r}: hf://owner/name or gs://bucket/path")
        if not SERVICE_ACCOUNT_ID.match(self.account_id):
            problems.append(f"ModelImportArgs.account_id {self.account_id!r}: 6-30 lowercase letters, digits, '-'")
        if not self.project or not self.region:
            problems.append("ModelImportArgs.project and .region are required")
        if not self.display_name:
            problems.append("ModelImportArgs.display_name is required (the console's name of the account)")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def from_hub(self) -> bool:
        return self.source_uri.startswith("hf://")

    def job_env(self) -> dict[str, str]:
        """The job's plain configuration (no secret is ever in here)."""
        return {
            "IMPORT_SOURCE": self.source_uri,
            "IMPORT_REVISION": self.revision,
            "IMPORT_PREFIX": self.prefix,
            "IMPORT_EXCLUDE": json.dumps(list(self.exclude)),
            "IMPORT_WORKERS": str(self.job.workers),
            "IMPORT_CHUNK_MIB": str(self.job.chunk_mib),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONUNBUFFERED": "1",
            **({"IMPORT_ADAPTER": self.adapter.to_json()} if self.adapter is not None else {}),
        }


class ModelImport(pulumi.ComponentResource):
    """Owns: the import's service account, its folder grant (and secret grant), the job and its run."""

    job_name: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    run_command: pulumi.Output[str]
    # What a consumer waits for: the run on `pulumi up` (or the job itself when it runs by hand).
    ready: pulumi.Resource

    def __init__(self, name: str, args: ModelImportArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if not RFC1035_ID.match(name):
            raise ValueError(f"ModelImport name {name!r} is the job's name: lowercase letters, digits, '-' (<= 63)")
        super().__init__(TypeToken.MODEL_IMPORT, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        envs = [cloud_run_job.env(name=k, value=v) for k, v in args.job_env().items()]
        envs.append(cloud_run_job.env(name="IMPORT_BUCKET", value=args.bucket_name))
        if args.writer is not None:
            email, grants = args.writer.email, list(args.writer.grants)
            reads_token = args.writer.reads_token
        else:
            email, grants = self._own_writer(name, args, child)
            reads_token = args.from_hub and args.hf_token is not None
        if args.from_hub and args.hf_token is not None and reads_token:
            envs.append(
                cloud_run_job.env(
                    name="HF_TOKEN",
                    value_source=cloud_run_job.env_value_source(
                        secret_key_ref=cloud_run_job.secret_key_ref(
                            secret=args.hf_token.secret_id, version=args.hf_token.version
                        )
                    ),
                )
            )
        job_spec = args.job
        job = gcp.CloudRunJob(
            f"{name}-job",
            # A fixed name, so the plan and the README can say which job to run by hand.
            name=name,
            location=args.region,
            project=args.project,
            deletion_protection=False,
            labels=dict(args.labels),
            template=cloud_run_job.template(
                task_count=1,
                parallelism=1,
                labels=dict(args.labels),
                template=cloud_run_job.task_template(
                    service_account=email,
                    timeout=f"{job_spec.timeout_minutes * 60}s",
                    # A retried task resumes where the failed one stopped (the job is idempotent).
                    max_retries=job_spec.max_retries,
                    containers=[
                        cloud_run_job.container(
                            name=IMPORT_JOB_CONTAINER,
                            image=args.image,
                            # The script travels in the job spec: no image build, no install at start.
                            commands=["python3"],
                            args=["-c", script_source()],
                            envs=envs,
                            resources=cloud_run_job.resources(
                                limits={"cpu": str(job_spec.cpu), "memory": f"{job_spec.memory_gib}Gi"}
                            ),
                        )
                    ],
                ),
            ),
            # Cloud Run checks the job's identity can read the secret it references.
            opts=pulumi.ResourceOptions(parent=self, depends_on=grants),
        )
        self.run_command = job.name.apply(
            lambda job_name: (
                f"gcloud run jobs execute {job_name} --region {args.region} --project {args.project} --wait"
            )
        )
        self.ready = job
        if job_spec.run_on_up:
            self.ready = LocalCommand(
                f"{name}{IMPORT_RUN_SUFFIX}",
                create=self.run_command,
                # Run again when what the prefix must hold changes; the job itself skips a complete copy.
                triggers=[
                    args.bucket_name,
                    args.prefix,
                    args.source_uri,
                    args.revision,
                    json.dumps(args.exclude),
                    *([args.adapter.to_json()] if args.adapter is not None else []),
                ],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[job, *grants]),
            )
        self.job_name = job.name
        self.service_account_email = email
        self.register_outputs(
            {
                "job_name": self.job_name,
                "service_account_email": self.service_account_email,
                "run_command": self.run_command,
            }
        )

    def _own_writer(
        self, name: str, args: ModelImportArgs, child: pulumi.ResourceOptions
    ) -> tuple[pulumi.Output[str], list[pulumi.Resource]]:
        """The import's own account, its folder grant and (for a Hugging Face source) its token grant."""
        identity = ServingIdentity(
            name,
            ServingIdentityArgs(
                account_id=args.account_id,
                display_name=args.display_name,
                description=f"Copies {args.source_uri} into the model bucket under {args.prefix}/ and nothing else.",
                former_parent=self,
            ),
            child,
        )
        reads_token = args.from_hub and args.hf_token is not None
        grants = folder_writer_grants(
            name,
            bucket_name=args.bucket_name,
            folder=args.prefix,
            member=identity.member,
            hf_token=args.hf_token if reads_token else None,
            project=args.project,
            child=child,
        )
        return identity.email, grants
