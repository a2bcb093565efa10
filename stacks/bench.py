"""The optional load-generator job next to a Cloud Run service: the `bench` block of a stack file.

Why in the stack: a benchmark run from a laptop adds the laptop's WAN round trip to every TTFT and its
few cores to every saturation, so the numbers at 2048 users describe the laptop. A Cloud Run job in
the service's own region, with several tasks of a few CPUs each, generates the load beside the
service instead (components/bench_job.py; `gemma-verify bench --on-cloud-run`). Absent by default:
a stack pays for nothing until it asks for it.

```yaml
gemma-serving:bench:
  tasks: 8           # load-generator tasks running at once; each runs its share of every cell's users
  cpuPerTask: 4      # one worker process per CPU inside each task
  # image: us-east4-docker.pkg.dev/<project>/gemma/verify-bench:v1   # optional: an image you pushed yourself
```

Without `image`, `pulumi up` builds images/verify-bench from this checkout with pulumi-docker, pushes it
to the stack's own Artifact Registry repository and runs the job by the pushed digest (deploy/bench_image.py;
never built on preview).
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from serving.cloud_run_jobs import MAX_TASK_MEMORY_GIB, MAX_TASKS, JobCpu, task_size_problems
from serving.gcp_names import bucket_path_problem
from stacks.base import SettingsModel
from stacks.images import PinnedImage

# This project's cap, below Cloud Run's 168 hours (serving/cloud_run_jobs.py): a sweep takes hours, and a
# task still running after a day is stuck, not measuring.
MAX_TIMEOUT_MINUTES = 24 * 60


def _results_path(value: str) -> str:
    problem = bucket_path_problem(value, bucket="the results bucket", example="bench-runs")
    if problem:
        raise ValueError(problem)
    return value


class BenchSettings(SettingsModel):
    """The load-generator job: how many tasks, how big, which image of this repository's verify."""

    # An image of `gemma-verify` (images/verify-bench/Dockerfile), pinned like every image we run; None:
    # the stack builds it from this checkout and runs it by digest.
    image: PinnedImage | None = None
    tasks: int = Field(default=4, ge=1, le=MAX_TASKS)
    cpu_per_task: JobCpu = 4
    memory_gib: int | None = Field(default=None, ge=1, le=MAX_TASK_MEMORY_GIB)
    timeout_minutes: int = Field(default=180, ge=5, le=MAX_TIMEOUT_MINUTES)
    # Objects under gs://<results bucket>/<resultsPrefix>/<run id>/ (one file per task).
    results_prefix: Annotated[str, AfterValidator(_results_path)] = "bench-runs"
    # Days the results bucket keeps raw samples before deleting them.
    keep_days: int = Field(default=30, ge=1, le=3650)

    @model_validator(mode="after")
    def _memory_fits_the_cpus(self) -> Self:
        if self.memory_gib is None:
            return self
        problems = task_size_problems(
            cpu=self.cpu_per_task, memory_gib=self.memory_gib, cpu_key="bench.cpuPerTask", memory_key="bench.memoryGib"
        )
        if problems:
            raise ValueError(f"{'; '.join(problems)}; or leave bench.memoryGib unset (2 GiB per CPU)")
        return self

    def memory(self) -> int:
        """GiB per task: as given, or 2 GiB per CPU (room for thousands of open streams per worker).

        The default is the stack's sizing policy, so it lives here and the component takes a resolved
        number (as VllmGpuServiceArgs takes cpu and memory_gib): the plan shows what Cloud Run gets, and a
        caller building BenchJob by hand states the size it pays for. 2 x 1, 2, 4, 6 or 8 vCPU is within
        Cloud Run's range for each (serving/cloud_run_jobs.py).
        """
        return self.memory_gib if self.memory_gib is not None else 2 * self.cpu_per_task
