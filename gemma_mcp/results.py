"""What each tool returns: typed, JSON-shaped, and free of secret values (see `redact`).

Why pydantic models: the SDK publishes each model as the tool's output schema, so an agent knows the
shape before it calls, and a result that drifts from its schema fails here rather than in the agent.
"""

from __future__ import annotations

from typing import Any

import pydantic


class Result(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class StackSummary(Result):
    name: str
    valid: bool
    problems: list[str] = []
    accelerator: str | None = None
    platform: str | None = None
    region: str | None = None
    zone: str | None = None
    model_path: str | None = None
    served_model_name: str | None = None
    project: str | None = None
    file: str | None = None


class StackList(Result):
    stacks: list[StackSummary]


class PlannedResource(Result):
    type: str
    name: str
    parent: str | None = None


class Plan(Result):
    """The offline plan of a stack (`python -m preview --format json`), trimmed for reading."""

    stack: str
    project: str
    resource_count: int
    resources: list[PlannedResource]
    outputs: dict[str, Any]
    notes: list[str]
    vllm_command: list[str] | None = None
    # Sections the preview adds beside resources and outputs (capacity, cost, ...), as it printed them.
    sections: dict[str, Any] = {}
    # Only with detail=true: every resource's inputs as the engine would receive them.
    inputs: dict[str, Any] | None = None


class Fit(Result):
    """The capacity planner's verdict on a stack's settings, or on catalog combinations without a stack."""

    stack: str | None
    verdict: str
    errors: list[str]
    warnings: list[str]
    capacity: dict[str, Any]
    # Without a stack: one row per model x variant x shape asked for (`make matrix --format json` rows).
    combinations: list[dict[str, Any]] = []


class Outputs(Result):
    stack: str
    outputs: dict[str, Any]
    secret_outputs: list[str]
    # The stack-output contract (serving/outputs.py) applied to them: the platform the outputs declare, and
    # each output missing or malformed (a stack deployed by an older version); the outputs are shown either way.
    platform: str | None = None
    contract_problems: list[str] = []


class CommandReport(Result):
    """A `python -m verify ...` run: its exit code, its JSON document and the line that explains it."""

    command: list[str]
    exit_code: int
    passed: bool
    timed_out: bool = False
    report: Any = None
    message: str | None = None


class BenchRun(CommandReport):
    results_file: str
    report_files: list[str]
    caps: dict[str, float]


class Comparison(Result):
    a: str
    b: str
    cells: list[dict[str, Any]]
    markdown: str
    # With three or more files: every file, and `cells` holds one entry per workload (gemma_mcp/compare_runs.py).
    runs: list[str] | None = None


class Change(Result):
    """What a cloud-changing tool did, from Pulumi's own summary."""

    stack: str
    operation: str
    result: str
    resource_changes: dict[str, int]
    outputs: dict[str, Any]
    secret_outputs: list[str]


class StackRead(Result):
    """A read-only look at one deployed stack (memory, models): the command's report and its exit code."""

    stack: str
    exit_code: int
    passed: bool
    report: dict[str, Any] | None
    message: str | None = None
