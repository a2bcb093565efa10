"""A Cloud Run job that generates benchmark load beside the service, and the bucket its tasks write to.

Why: `verify bench` from a laptop measures the laptop too (its WAN round trip in every TTFT, its few
cores saturating long before the service does at 2048 users). This job runs `python -m verify bench
task` in ``tasks`` parallel tasks in the service's region; each task runs its share of every cell's
users with one worker process per CPU and writes its raw per-request samples to
``/results/<prefix>/<run id>/task-<index>.jsonl``, a Cloud Storage volume on the results bucket. The
tasks meet at a barrier (files on the same volume) before each cell's measured phase, so their load
overlaps. `gemma-verify bench collect` merges the files into the usual JSONL, CSV, Markdown and PNG.

Least privilege: its own service account, allowed to invoke this one service (`roles/run.invoker` on
it, nothing project-wide) and to create and read objects in the results bucket only
(`roles/storage.objectUser` on that bucket; the barrier lists the other tasks' files). The bucket is
private (uniform access, public access prevention enforced) and deletes raw samples after
``keep_days``. A failed task is not retried: a retry would measure its share again, later, alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.wire import cloud_run_job, gcp, storage
from policy.image_pins import image_pin_problem
from serving.cloud_run_jobs import JobKeys, job_problems
from serving.gcp_names import RFC1035_ID, SERVICE_ACCOUNT_ID, bucket_path_problem
from serving.naming import BENCH_JOB_CONTAINER, TypeToken

INVOKER_ROLE = "roles/run.invoker"
RESULTS_ROLE = "roles/storage.objectUser"
RESULTS_MOUNT = "/results"
# The barrier lists files other tasks just wrote: Cloud Storage FUSE must not cache the listing.
# The files belong to the image's non-root user (images/verify-bench/Dockerfile: USER 65532).
RESULTS_MOUNT_OPTIONS = ("metadata-cache-ttl-secs=0", "implicit-dirs", "uid=65532", "gid=65532")
_ARGS = "BenchJobArgs"


@dataclass(frozen=True)
class BenchJobArgs:
    """The service to load (its name, region and URL) and the load generator's shape, every size resolved.

    No defaults for the shape: the stack's `bench` block (stacks/bench.py) owns them, memory included
    (2 GiB per CPU unless set), so a default lives in one place and the plan shows what Cloud Run gets.
    """

    region: str
    service_name: pulumi.Input[str]
    service_url: pulumi.Input[str]
    served_model_name: str
    account_id: str
    # What the console shows for the load generator's account: serving/naming.py's, naming the stack.
    display_name: str
    # A pinned image of this repository's `gemma-verify` (images/verify-bench/Dockerfile): a tag or
    # digest given in the stack, or the digest of the image the stack built (an Output).
    image: pulumi.Input[str]
    # Tasks running at once; each runs its share of every cell's users.
    tasks: int
    # One load-generator worker process per vCPU (1, 2, 4, 6 or 8: Cloud Run's sizes for a job's task).
    cpu_per_task: int
    memory_gib: int
    task_timeout_seconds: int
    # Each task writes gs://<results bucket>/<results_prefix>/<run id>/task-<index>.jsonl.
    results_prefix: str
    # Days the results bucket keeps raw samples before deleting them.
    keep_days: int
    project: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not SERVICE_ACCOUNT_ID.match(self.account_id):
            problems.append(f"{_ARGS}.account_id {self.account_id!r}: 6-30 lowercase letters, digits, '-'")
        if not self.region:
            problems.append(f"{_ARGS}.region is required (the service's region)")
        if not self.served_model_name:
            problems.append(f"{_ARGS}.served_model_name is required")
        if not self.display_name:
            problems.append(f"{_ARGS}.display_name is required (the console's name of the account)")
        image = image_pin_problem(self.image) if isinstance(self.image, str) else None
        if image:
            problems.append(f"{_ARGS}.image: {image}")
        problems += job_problems(
            tasks=self.tasks,
            cpu=self.cpu_per_task,
            memory_gib=self.memory_gib,
            timeout_seconds=self.task_timeout_seconds,
            keys=JobKeys(
                tasks=f"{_ARGS}.tasks",
                cpu=f"{_ARGS}.cpu_per_task",
                memory_gib=f"{_ARGS}.memory_gib",
                timeout_seconds=f"{_ARGS}.task_timeout_seconds",
            ),
        )
        prefix = bucket_path_problem(self.results_prefix, bucket="the results bucket", example="bench-runs")
        if prefix:
            problems.append(f"{_ARGS}.results_prefix: {prefix}")
        if self.keep_days < 1:
            problems.append(
                f"{_ARGS}.keep_days: {self.keep_days}; allowed: 1 or more (0 would delete samples before collect)"
            )
        if problems:
            raise ValueError("; ".join(problems))

    def job_env(self) -> dict[str, str]:
        """Plain configuration of every task (the URL is added as an output; no secret is ever here)."""
        return {
            "BENCH_MODEL": self.served_model_name,
            "BENCH_RESULTS": f"{RESULTS_MOUNT}/{self.results_prefix}",
            "BENCH_WORKERS": str(self.cpu_per_task),
            "PYTHONUNBUFFERED": "1",
        }


class BenchJob(pulumi.ComponentResource):
    """Owns: the load generator's service account, its invoker binding on the service, the results bucket
    and its writer binding, and the job. Does not own: the service, or any execution (verify starts those)."""

    job_name: pulumi.Output[str]
    results_bucket: pulumi.Output[str]
    service_account_email: pulumi.Output[str]

    def __init__(self, name: str, args: BenchJobArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if not RFC1035_ID.match(name):
            raise ValueError(f"BenchJob name {name!r} is the job's name: lowercase letters, digits, '-' (<= 63)")
        super().__init__(TypeToken.BENCH_JOB, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        identity = ServingIdentity(
            name,
            ServingIdentityArgs(
                account_id=args.account_id,
                display_name=args.display_name,
                description=(
                    "Invokes one vLLM service and writes benchmark samples to its results bucket; nothing else."
                ),
                former_parent=self,
            ),
            child,
        )
        member = identity.member
        invoker = gcp.CloudRunServiceIamMember(
            f"{name}-invoker",
            name=args.service_name,
            location=args.region,
            role=INVOKER_ROLE,
            member=member,
            opts=child,
        )
        bucket = gcp.Bucket(
            f"{name}-results",
            location=args.region,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=True,  # raw samples only; the merged reports live wherever collect writes them
            lifecycle_rules=[
                storage.lifecycle_rule(
                    action=storage.lifecycle_action(type="Delete"),
                    condition=storage.lifecycle_condition(age=args.keep_days),
                )
            ],
            labels=dict(args.labels),
            opts=child,
        )
        writer = gcp.BucketIamMember(f"{name}-writer", bucket=bucket.name, role=RESULTS_ROLE, member=member, opts=child)
        envs = [cloud_run_job.env(name=k, value=v) for k, v in args.job_env().items()]
        envs.append(cloud_run_job.env(name="BENCH_URL", value=args.service_url))
        job = gcp.CloudRunJob(
            f"{name}-job",
            name=name,
            location=args.region,
            project=args.project,
            deletion_protection=False,
            labels=dict(args.labels),
            template=cloud_run_job.template(
                # Every task at once: the load of a cell is the sum of the tasks' shares.
                task_count=args.tasks,
                parallelism=args.tasks,
                labels=dict(args.labels),
                template=cloud_run_job.task_template(
                    service_account=identity.email,
                    timeout=f"{args.task_timeout_seconds}s",
                    max_retries=0,
                    containers=[
                        cloud_run_job.container(
                            name=BENCH_JOB_CONTAINER,
                            image=args.image,
                            commands=["python", "-m", "verify", "bench", "task"],
                            envs=envs,
                            resources=cloud_run_job.resources(
                                limits={"cpu": str(args.cpu_per_task), "memory": f"{args.memory_gib}Gi"}
                            ),
                            volume_mounts=[cloud_run_job.volume_mount(name="results", mount_path=RESULTS_MOUNT)],
                        )
                    ],
                    volumes=[
                        cloud_run_job.volume(
                            name="results",
                            gcs=cloud_run_job.volume_gcs(
                                bucket=bucket.name,
                                read_only=False,
                                mount_options=list(RESULTS_MOUNT_OPTIONS),
                            ),
                        )
                    ],
                ),
            ),
            # A task must be able to call the service and write its file from its first second.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[invoker, writer]),
        )
        self.job_name = job.name
        self.results_bucket = bucket.name
        self.service_account_email = identity.email
        self.register_outputs(
            {
                "job_name": self.job_name,
                "results_bucket": self.results_bucket,
                "service_account_email": self.service_account_email,
            }
        )
