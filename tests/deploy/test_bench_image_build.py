"""The load generator's image built by the stack (pulumi-docker) when its bench block names none.

Guards against: a job pinned to a hand-pushed image that drifts from the checkout reading its results; a
preview that needs Docker; a job that runs a mutable tag instead of the pushed digest.
"""

from __future__ import annotations

import json
from typing import Any

from preview.capture import Capture
from preview.render import COMPUTED, clean
from preview.supply_plan import supply_section
from tests.conftest import render_stack

DOCKER_IMAGE = "docker:index/image:Image"
REPOSITORY = "gcp:artifactregistry/repository:Repository"
JOB = "gcp:cloudrunv2/job:Job"
BENCH = {"tasks": 8, "cpuPerTask": 4}


def with_bench(block: dict[str, Any]) -> Capture:
    return render_stack("l4", {"gemma-serving:bench": json.dumps(block)})


def _bench_job(capture: Capture) -> dict[str, Any]:
    (job,) = [job for job in capture.of_type(JOB) if job.name.endswith("-bench-job")]
    return dict(job.inputs)


def test_without_an_image_the_stack_builds_verify_bench_and_runs_its_digest() -> None:
    capture = with_bench(BENCH)
    (image,) = [r for r in capture.of_type(DOCKER_IMAGE) if r.name == "gemma-l4-bench-image-image"]
    inputs = image.inputs
    assert inputs["buildOnPreview"] is False
    assert inputs["build"]["context"] == "."
    assert inputs["build"]["dockerfile"] == "./images/verify-bench/Dockerfile"
    assert clean(inputs["build"]["args"]["BASE_IMAGE"]).endswith("/gemma-l4-dockerhub/library/python:3.12-slim")
    assert inputs["imageName"].startswith(
        "us-east4-docker.pkg.dev/offline-placeholder-project/gemma-l4-bench-images/verify-bench:v"
    )
    repositories = [clean(r.inputs) for r in capture.of_type(REPOSITORY) if r.name.startswith("gemma-l4-bench-image")]
    assert [(r["repositoryId"], r["dockerConfig"]["immutableTags"]) for r in repositories] == [
        ("gemma-l4-bench-images", False)
    ]
    (container,) = _bench_job(capture)["template"]["template"]["containers"]
    assert clean(container["image"]) == COMPUTED  # the pushed digest, known after the build on `pulumi up`


def test_a_pinned_image_in_the_stack_is_run_as_given_and_nothing_is_built() -> None:
    pinned = "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1"
    capture = with_bench({**BENCH, "image": pinned})
    assert not [r for r in capture.of_type(DOCKER_IMAGE) if "bench" in r.name]
    (container,) = _bench_job(capture)["template"]["template"]["containers"]
    assert container["image"] == pinned


def test_the_text_plan_shows_the_build_and_that_preview_does_not_run_it() -> None:
    text = "\n".join(supply_section(with_bench(BENCH)))
    assert "verify-bench:v" in text
    assert "build on preview: false" in text
