"""A stack's `bench` block in the plan: present only when asked for, its settings resolved onto BenchJob's Args."""

from __future__ import annotations

import json
from typing import Any

import pytest

from preview.capture import Capture
from preview.render import clean
from tests.conftest import render_stack

JOB = "gcp:cloudrunv2/job:Job"
BENCH = {"image": "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1", "tasks": 8, "cpuPerTask": 4}


def with_bench(block: dict[str, Any]) -> Capture:
    return render_stack("l4", {"gemma-serving:bench": json.dumps(block)})


def bench_jobs(capture: Capture) -> list[dict[str, Any]]:
    return [dict(clean(job.inputs)) for job in capture.of_type(JOB) if job.name.endswith("-bench-job")]


def test_no_bench_block_no_job() -> None:
    """Guards against every stack paying for (and exposing) a load generator nobody asked for."""
    capture = render_stack("l4")
    assert bench_jobs(capture) == []
    assert not [r for r in capture.resources if r.type == "gemma:verify:BenchJob"]
    assert "benchJob" not in capture.outputs


def test_the_block_reaches_the_job_with_its_defaults_resolved() -> None:
    """Guards against the stack's sizing policy getting lost between the settings and the component: memory
    defaults to 2 GiB per CPU, the timeout is given in minutes, and the outputs name the job for verify."""
    capture = with_bench({**BENCH, "cpuPerTask": 6, "timeoutMinutes": 45, "resultsPrefix": "team/runs"})
    (job,) = bench_jobs(capture)
    inner = job["template"]["template"]
    (container,) = inner["containers"]
    assert container["resources"]["limits"] == {"cpu": "6", "memory": "12Gi"}
    assert inner["timeout"] == "2700s"
    env = {item["name"]: item.get("value") for item in container["envs"]}
    assert env["BENCH_RESULTS"] == "/results/team/runs"
    assert env["BENCH_MODEL"] == "gemma-4-12b-it"
    # The whole block is one Output (the results bucket's name is known only after deploy).
    assert "benchJob" in capture.outputs


def test_a_tpu_stack_refuses_the_block() -> None:
    """Guards against a bench block silently ignored on a stack without a Cloud Run service."""
    with pytest.raises(Exception, match="bench: the load-generator job runs beside a Cloud Run service"):
        render_stack("tpu-v6e", {"gemma-serving:bench": json.dumps(BENCH)})
