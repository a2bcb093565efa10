"""The load-generator job in the plan: present only when a stack asks for it, beside the service, least privilege."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from components.bench_job import BenchJobArgs
from preview.capture import Capture
from preview.render import clean
from stacks.bench import BenchSettings
from tests.conftest import render_stack

JOB = "gcp:cloudrunv2/job:Job"
BENCH = {"image": "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1", "tasks": 8, "cpuPerTask": 4}


def with_bench(block: dict[str, Any] | None = None) -> Capture:
    return render_stack("l4", {"gemma-serving:bench": json.dumps(block or BENCH)})


def bench_jobs(capture: Capture) -> list[dict[str, Any]]:
    return [dict(clean(job.inputs)) for job in capture.of_type(JOB) if job.name.endswith("-bench-job")]


def test_no_bench_block_no_job() -> None:
    """Guards against every stack paying for (and exposing) a load generator nobody asked for."""
    capture = render_stack("l4")
    assert bench_jobs(capture) == []
    assert not [r for r in capture.resources if r.type == "gemma:verify:BenchJob"]


def test_the_job_runs_all_tasks_at_once_beside_the_service() -> None:
    """Guards against tasks running one after another (no combined load) or in another region (WAN in TTFT)."""
    (job,) = bench_jobs(with_bench())
    assert job["location"] == "us-east4"
    template = job["template"]
    assert template["taskCount"] == 8
    assert template["parallelism"] == 8
    inner = template["template"]
    assert inner["maxRetries"] == 0
    (container,) = inner["containers"]
    assert container["commands"] == ["python", "-m", "verify", "bench", "task"]
    assert container["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}
    env = {item["name"]: item.get("value") for item in container["envs"]}
    assert env["BENCH_MODEL"] == "gemma-4-12b-it"
    assert env["BENCH_WORKERS"] == "4"
    assert env["BENCH_RESULTS"] == "/results/bench-runs"
    (volume,) = inner["volumes"]
    assert "metadata-cache-ttl-secs=0" in volume["gcs"]["mountOptions"]


def test_the_job_may_invoke_this_service_and_write_its_results_only() -> None:
    """Guards against a load generator with project-wide roles, or one the service refuses (403 in every cell)."""
    capture = with_bench()
    invokers = [
        dict(clean(r.inputs))
        for r in capture.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
        if r.name.endswith("-bench-invoker")
    ]
    assert len(invokers) == 1
    assert invokers[0]["role"] == "roles/run.invoker"
    assert invokers[0]["location"] == "us-east4"
    writers = [r for r in capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if "-bench-" in r.name]
    assert [dict(clean(w.inputs))["role"] for w in writers] == ["roles/storage.objectUser"]
    assert not [r for r in capture.resources if r.type.startswith("gcp:projects/iam")]
    bucket = next(r for r in capture.of_type("gcp:storage/bucket:Bucket") if r.name.endswith("-bench-results"))
    inputs = dict(clean(bucket.inputs))
    assert inputs["publicAccessPrevention"] == "enforced"
    assert inputs["uniformBucketLevelAccess"] is True


def test_settings_refuse_what_cloud_run_would() -> None:
    """Guards against a job Cloud Run rejects at deploy time (memory below the CPU's minimum, odd CPU counts)."""
    with pytest.raises(ValidationError, match=r"bench.memoryGib 1 is below Cloud Run's minimum of 4 GiB"):
        BenchSettings.model_validate({**BENCH, "cpuPerTask": 8, "memoryGib": 1})
    with pytest.raises(ValidationError, match="cpuPerTask"):
        BenchSettings.model_validate({**BENCH, "cpuPerTask": 3})
    with pytest.raises(ValidationError, match="floating tag"):
        BenchSettings.model_validate({**BENCH, "image": "verify-bench:latest"})
    with pytest.raises(ValidationError, match="taks"):
        BenchSettings.model_validate({**BENCH, "taks": 3})


def test_a_tpu_stack_refuses_the_block() -> None:
    """Guards against a bench block silently ignored on a stack without a Cloud Run service."""
    with pytest.raises(Exception, match="bench: the load-generator job runs beside a Cloud Run service"):
        render_stack("tpu-v6e", {"gemma-serving:bench": json.dumps(BENCH)})


def test_args_refuse_a_bad_account_id() -> None:
    """Guards against a name Google rejects only at deploy time."""
    with pytest.raises(ValueError, match="account_id"):
        BenchJobArgs(
            region="us-east4",
            service_name="s",
            service_url="https://s",
            served_model_name="m",
            account_id="Bad_Id",
            settings=BenchSettings.model_validate(BENCH),
        )
