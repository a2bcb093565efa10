"""The stack file's `bench` block: what Cloud Run would refuse is refused under the block's own keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from stacks.bench import BenchSettings

BENCH = {"image": "us-east4-docker.pkg.dev/p/gemma/verify-bench:v1", "tasks": 8, "cpuPerTask": 4}


def test_settings_refuse_what_cloud_run_would() -> None:
    """Guards against a job Cloud Run rejects at deploy time (memory outside the CPU's range, odd CPU counts)."""
    with pytest.raises(ValidationError, match=r"bench.memoryGib: 1 is below Cloud Run's minimum of 4 GiB for 8"):
        BenchSettings.model_validate({**BENCH, "cpuPerTask": 8, "memoryGib": 1})
    with pytest.raises(ValidationError, match=r"bench.memoryGib: 16 is above Cloud Run's maximum of 4 GiB for 1"):
        BenchSettings.model_validate({**BENCH, "cpuPerTask": 1, "memoryGib": 16})
    with pytest.raises(ValidationError, match="cpuPerTask"):
        BenchSettings.model_validate({**BENCH, "cpuPerTask": 3})
    with pytest.raises(ValidationError, match="floating tag"):
        BenchSettings.model_validate({**BENCH, "image": "verify-bench:latest"})
    with pytest.raises(ValidationError, match="taks"):
        BenchSettings.model_validate({**BENCH, "taks": 3})


def test_results_prefix_stays_inside_the_results_bucket() -> None:
    """Guards against `resultsPrefix: ../x` sending every task's samples outside the mounted bucket (lost)."""
    with pytest.raises(ValidationError, match=r"'\.\./x' must be a relative object path inside the results bucket"):
        BenchSettings.model_validate({**BENCH, "resultsPrefix": "../x"})
    assert BenchSettings.model_validate({**BENCH, "resultsPrefix": "team/runs"}).results_prefix == "team/runs"


def test_memory_defaults_to_two_gib_per_cpu() -> None:
    """Guards against a default that Cloud Run refuses for some CPU count, or too small for a worker's streams."""
    for cpu in (1, 2, 4, 6, 8):
        assert BenchSettings.model_validate({**BENCH, "cpuPerTask": cpu}).memory() == 2 * cpu
    assert BenchSettings.model_validate({**BENCH, "cpuPerTask": 8, "memoryGib": 4}).memory() == 4
