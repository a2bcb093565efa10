"""The optional load-generator job next to a Cloud Run service: the `bench` block of a stack file.

Why in the stack: a benchmark run from a laptop adds the laptop's WAN round trip to every TTFT and its
few cores to every saturation, so the numbers at 2048 users describe the laptop. A Cloud Run job in
the service's own region, with several tasks of a few CPUs each, generates the load beside the
service instead (components/bench_job.py; `python -m verify bench --on-cloud-run`). Absent by default:
a stack pays for nothing until it asks for it.

```yaml
gemma-serving:bench:
  image: us-east4-docker.pkg.dev/<project>/gemma/verify-bench:v1   # built from images/verify-bench
  tasks: 8           # load-generator tasks running at once; each runs its share of every cell's users
  cpuPerTask: 4      # one worker process per CPU inside each task
```
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from stacks.base import SettingsModel
from stacks.images import PinnedImage

# Source: https://cloud.google.com/run/docs/configuring/jobs/parallelism (at most 10,000 tasks per job)
# and https://cloud.google.com/run/docs/configuring/jobs/cpu (jobs: 1, 2, 4, 6 or 8 vCPU).
MAX_TASKS = 10_000
JOB_CPUS = (1, 2, 4, 6, 8)
# Source: https://cloud.google.com/run/docs/configuring/jobs/memory-limits (minimum memory per vCPU:
# 4 and 6 vCPU need at least 2 GiB, 8 vCPU at least 4 GiB; 512 MiB is too little for 1,000 streams).
MIN_MEMORY_GIB = {1: 1, 2: 1, 4: 2, 6: 4, 8: 4}
# Source: https://cloud.google.com/run/docs/configuring/task-timeout (at most 168 hours; a sweep is hours).
MAX_TIMEOUT_MINUTES = 24 * 60


class BenchSettings(SettingsModel):
    """The load-generator job: how many tasks, how big, which image of this repository's verify."""

    # An image of `python -m verify` (images/verify-bench/Dockerfile), pinned like every image we run.
    image: PinnedImage
    tasks: int = Field(default=4, ge=1, le=MAX_TASKS)
    cpu_per_task: Literal[1, 2, 4, 6, 8] = 4
    memory_gib: int | None = Field(default=None, ge=1, le=32)
    timeout_minutes: int = Field(default=180, ge=5, le=MAX_TIMEOUT_MINUTES)
    # Objects under gs://<results bucket>/<resultsPrefix>/<run id>/ (one file per task).
    results_prefix: str = Field(default="bench-runs", pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
    # Days the results bucket keeps raw samples before deleting them.
    keep_days: int = Field(default=30, ge=1, le=3650)

    @model_validator(mode="after")
    def _memory_fits_the_cpus(self) -> Self:
        least = MIN_MEMORY_GIB[self.cpu_per_task]
        if self.memory_gib is not None and self.memory_gib < least:
            raise ValueError(
                f"bench.memoryGib {self.memory_gib} is below Cloud Run's minimum of {least} GiB for "
                f"{self.cpu_per_task} vCPU per task; raise it or leave it unset (2 GiB per CPU)"
            )
        return self

    def memory(self) -> int:
        """GiB per task: as given, or 2 GiB per CPU (room for thousands of open streams per worker)."""
        return self.memory_gib if self.memory_gib is not None else max(2 * self.cpu_per_task, 1)
