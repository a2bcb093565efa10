"""BenchJob built from its own Args: all tasks at once beside the service, least privilege, clear refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.bench_job import BenchJob, BenchJobArgs
from preview.capture import Capture
from preview.render import clean
from serving.naming import TypeToken

JOB = "gcp:cloudrunv2/job:Job"


def args(**changes: object) -> BenchJobArgs:
    values: dict[str, object] = {
        "region": "us-east4",
        "service_name": "svc",
        "service_url": "https://svc-abc-uk.a.run.app",
        "served_model_name": "gemma-4-12b-it",
        "account_id": "l4-bench",
        "display_name": "gemma-serving l4 benchmark load generator",
        "image": "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1",
        "tasks": 8,
        "cpu_per_task": 4,
        "memory_gib": 8,
        "task_timeout_seconds": 3 * 3600,
        "results_prefix": "bench-runs",
        "keep_days": 30,
    }
    values.update(changes)
    return BenchJobArgs(**values)  # type: ignore[arg-type]


def inputs_of(capture: Capture, type_: str, suffix: str) -> dict[str, Any]:
    (resource,) = [r for r in capture.of_type(type_) if r.name.endswith(suffix)]
    return dict(clean(resource.inputs))


@pytest.fixture
def capture(register: Callable[[Callable[[], object]], Capture]) -> Capture:
    return register(lambda: BenchJob("l4-bench", args()))


def test_the_account_keeps_its_place_from_before_serving_identity(capture: Capture) -> None:
    """The account was the BenchJob's own child (`<job>-sa`) before it became a ServingIdentity: without the
    alias a deployed stack's next `pulumi up` would delete the load generator's account and create it again."""
    (account,) = capture.of_type("gcp:serviceaccount/account:Account")
    (job,) = capture.of_type(TypeToken.BENCH_JOB)
    (identity,) = capture.of_type(TypeToken.SERVING_IDENTITY)
    assert account.parent == identity.urn
    assert identity.parent == job.urn
    assert f"name=l4-bench-sa parentUrn={job.urn}" in account.aliases
    assert inputs_of(capture, "gcp:serviceaccount/account:Account", "-sa") == {
        "accountId": "l4-bench",
        "description": "Invokes one vLLM service and writes benchmark samples to its results bucket; nothing else.",
        "displayName": "gemma-serving l4 benchmark load generator",
    }


def test_the_job_runs_all_tasks_at_once_beside_the_service(capture: Capture) -> None:
    """Guards against tasks running one after another (no combined load) or in another region (WAN in TTFT)."""
    job = inputs_of(capture, JOB, "-job")
    assert job["name"] == "l4-bench"
    assert job["location"] == "us-east4"
    template = job["template"]
    assert template["taskCount"] == 8
    assert template["parallelism"] == 8
    inner = template["template"]
    assert inner["maxRetries"] == 0
    assert inner["timeout"] == "10800s"
    (container,) = inner["containers"]
    assert container["image"] == "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1"
    assert container["commands"] == ["python", "-m", "verify", "bench", "task"]
    assert container["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}
    env = {item["name"]: item.get("value") for item in container["envs"]}
    assert env["BENCH_MODEL"] == "gemma-4-12b-it"
    assert env["BENCH_WORKERS"] == "4"
    assert env["BENCH_RESULTS"] == "/results/bench-runs"
    assert env["BENCH_URL"] == "https://svc-abc-uk.a.run.app"
    (volume,) = inner["volumes"]
    assert "metadata-cache-ttl-secs=0" in volume["gcs"]["mountOptions"]


def test_the_job_may_invoke_this_service_and_write_its_results_only(capture: Capture) -> None:
    """Guards against a load generator with project-wide roles, or one the service refuses (403 in every cell)."""
    invoker = inputs_of(capture, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "-invoker")
    assert invoker["role"] == "roles/run.invoker"
    assert invoker["name"] == "svc"
    assert invoker["location"] == "us-east4"
    writers = capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert [dict(clean(w.inputs))["role"] for w in writers] == ["roles/storage.objectUser"]
    assert not [r for r in capture.resources if r.type.startswith("gcp:projects/iam")]
    bucket = inputs_of(capture, "gcp:storage/bucket:Bucket", "-results")
    assert bucket["publicAccessPrevention"] == "enforced"
    assert bucket["uniformBucketLevelAccess"] is True
    (rule,) = bucket["lifecycleRules"]
    assert rule["condition"]["age"] == 30


def test_args_refuse_a_bad_account_id() -> None:
    """Guards against a name Google rejects only at deploy time."""
    with pytest.raises(ValueError, match=r"BenchJobArgs\.account_id 'Bad_Id': 6-30 lowercase"):
        args(account_id="Bad_Id")


def test_args_refuse_an_account_the_console_shows_unnamed() -> None:
    """Guards against a load generator's account the console lists without saying which stack it serves."""
    with pytest.raises(ValueError, match=r"BenchJobArgs\.display_name is required"):
        args(display_name="")


def test_args_refuse_a_job_shape_cloud_run_would() -> None:
    """Guards against a caller without the stack schema deploying a job Cloud Run rejects (size, count, timeout)."""
    with pytest.raises(ValueError, match=r"BenchJobArgs\.cpu_per_task: 3 vCPU .* allowed: 1, 2, 4, 6, 8"):
        args(cpu_per_task=3)
    with pytest.raises(ValueError, match=r"BenchJobArgs\.memory_gib: 2 is below Cloud Run's minimum of 4 GiB for 8"):
        args(cpu_per_task=8, memory_gib=2)
    with pytest.raises(ValueError, match=r"BenchJobArgs\.memory_gib: 16 is above Cloud Run's maximum of 4 GiB for 1"):
        args(cpu_per_task=1, memory_gib=16)
    with pytest.raises(ValueError, match=r"BenchJobArgs\.tasks: 0; allowed: 1-10000"):
        args(tasks=0)
    with pytest.raises(ValueError, match=r"BenchJobArgs\.task_timeout_seconds: 0; allowed: 1-604800"):
        args(task_timeout_seconds=0)


def test_args_refuse_results_outside_the_bucket_and_instant_deletion() -> None:
    """Guards against samples written outside the results volume ('..') or deleted before collect merges them."""
    with pytest.raises(ValueError, match=r"BenchJobArgs\.results_prefix: '\.\./x' must be a relative object path"):
        args(results_prefix="../x")
    with pytest.raises(ValueError, match=r"BenchJobArgs\.results_prefix: '/abs' .* inside the results bucket"):
        args(results_prefix="/abs")
    with pytest.raises(ValueError, match=r"BenchJobArgs\.keep_days: 0; allowed: 1 or more"):
        args(keep_days=0)


def test_args_refuse_an_unpinned_image() -> None:
    """Guards against two runs of the same commit measuring different load generators (a moving tag)."""
    with pytest.raises(ValueError, match=r"BenchJobArgs\.image: .* floating tag :latest"):
        args(image="us-east4-docker.pkg.dev/p/gemma/verify-bench:latest")


def test_args_report_every_problem_at_once() -> None:
    """Guards against fixing one field, redeploying, and only then learning of the next."""
    with pytest.raises(ValueError, match="BenchJobArgs") as caught:
        args(tasks=0, keep_days=0, region="")
    message = str(caught.value)
    assert "BenchJobArgs.tasks" in message
    assert "BenchJobArgs.keep_days" in message
    assert "BenchJobArgs.region is required" in message


def test_the_component_name_is_the_job_name(register: Callable[[Callable[[], object]], Capture]) -> None:
    """Guards against a job name Cloud Run refuses only at deploy time."""
    with pytest.raises(ValueError, match="BenchJob name 'Bench_Job' is the job's name"):
        register(lambda: BenchJob("Bench_Job", args()))
