"""What each tool returns: typed, JSON-shaped, and free of secret values (see `redact`).

Why pydantic models: the SDK publishes each model as the tool's output schema, so an agent knows the
shape before it calls, and a result that drifts from its schema fails here rather than in the agent.
Every report is verify's own model (HealthReport, StatusReport, CellRecord, ...), and a deployed stack's
outputs the contract's (serving.outputs); what the project has no model for (a resource's inputs, the
preview's extra sections) is `JsonData`, JSON typed all the way down. tests/gemma_mcp/test_output_schemas.py
fails on any field of any tool's schema that is left untyped. The SDK publishes and checks each schema in
pydantic's validation mode, which has no computed fields (`exit_code`): `reply` leaves them out of the
structured result, and the tool results carry `exit_code` and `passed` themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Literal, TypeVar

import pydantic

from serving.outputs import DeployedOutputs
from verify.adapters.promote import PromotionsReport
from verify.adapters.run import AdapterCheckReport, AdapterListing
from verify.bench.compare import Verdict as DeltaVerdict
from verify.bench.results import CellRecord
from verify.health.report import HealthReport
from verify.memory.layout import MemoryLayout
from verify.metrics.reading import MetricsReport
from verify.models.inventory import BucketInventory
from verify.ops.logs import LogsReport
from verify.ops.preflight import PreflightReport
from verify.ops.status import StatusReport
from verify.promote.machine import PromotionReport
from verify.query.run import QueryReport


class Result(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


_Report = TypeVar("_Report", bound=pydantic.BaseModel)


def report_reader(model: type[_Report]) -> Callable[[str], _Report]:
    """Reads a command's `--json` report back into its model. The JSON carries the model's computed fields
    (`exit_code`), which validation would refuse as extra inputs: they are left out and derived again."""

    def read(text: str) -> _Report:
        document = json.loads(text)
        if isinstance(document, dict):
            document = {key: value for key, value in document.items() if key not in model.model_computed_fields}
        return model.model_validate(document)

    return read


class JsonData(pydantic.RootModel[str | int | float | bool | None | list["JsonData"] | dict[str, "JsonData"]]):
    """A JSON value, typed all the way down (pydantic's JsonValue publishes an empty, untyped schema)."""


def json_data(values: Mapping[str, object]) -> dict[str, JsonData]:
    """Each value as JsonData (pydantic would convert them too; this says so to the type checker)."""
    return {name: JsonData.model_validate(value) for name, value in values.items()}


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
    # The outputs `pulumi up` would export, as the preview printed them: what only Google or the deploy knows
    # (an endpoint, a TPU placement's provisioning model) is "<computed>", which no contract type admits.
    outputs: dict[str, JsonData]
    notes: list[str]
    vllm_command: list[str] | None = None
    # Sections the preview adds beside resources and outputs (capacity, cost, ...), as it printed them.
    sections: dict[str, JsonData] = {}
    # Only with detail=true: every resource's inputs as the engine would receive them.
    inputs: dict[str, dict[str, JsonData]] | None = None


class Fit(Result):
    """The capacity planner's verdict on a stack's settings, or on catalog combinations without a stack."""

    stack: str | None
    verdict: str
    errors: list[str]
    warnings: list[str]
    capacity: dict[str, JsonData]
    # Without a stack: one row per model x variant x shape asked for (`make matrix --format json` rows).
    combinations: list[dict[str, JsonData]] = []


class Outputs(Result):
    stack: str
    # The contract's tolerant reading (serving.outputs.DeployedOutputs), secret values as "[secret]"; outputs the
    # stack does not export are left out.
    outputs: DeployedOutputs
    # Outputs the contract does not declare (a newer program's), as exported.
    other_outputs: dict[str, JsonData] = {}
    secret_outputs: list[str]
    # The stack-output contract (serving/outputs.py) applied to them: the platform the outputs declare, and
    # each output missing or malformed (a stack deployed by an older version); the outputs are shown either way.
    platform: str | None = None
    contract_problems: list[str] = []

    @pydantic.field_serializer("outputs")
    def _exported_only(self, outputs: DeployedOutputs) -> dict[str, object]:
        return outputs.model_dump(mode="json", by_alias=True, exclude_unset=True)


class CommandRun(Result):
    """A `python -m verify ...` run: its exit code, its JSON report (each tool's own type) and the line that
    explains it."""

    command: list[str]
    exit_code: int
    passed: bool
    timed_out: bool = False
    message: str | None = None


class HealthRun(CommandRun):
    report: HealthReport | None = None


class QueryRun(CommandRun):
    report: QueryReport | None = None


class MetricsRun(CommandRun):
    report: MetricsReport | None = None


class AdaptersRun(CommandRun):
    """One `verify adapters <action>` run. One model for every action, each report in a field of its own: the
    SDK publishes an object schema only for a single model (a union of two was wrapped as `{"result": ...}`,
    which no reply matched, so every call failed its own output validation)."""

    action: Literal["list", "check", "promote"]
    listing: AdapterListing | None = None
    check: AdapterCheckReport | None = None
    promotion: PromotionsReport | None = None


class BenchRun(CommandRun):
    report: list[CellRecord] | None = None
    results_file: str
    report_files: list[str]
    caps: dict[str, float]


class PromotionRun(Result):
    """What `verify promote --json` printed last (None when it printed none: killed, crashed) and the end of
    its output."""

    outcome: PromotionReport | None
    output: str


class PromoteRun(CommandRun):
    report: PromotionRun


class DeltaResult(Result):
    a: float | None
    b: float | None
    change: float | None
    verdict: DeltaVerdict | None


class ComparedCell(Result):
    """One cell (context x concurrency) of two runs compared: B's change against A per metric."""

    context: int
    concurrency: int
    status: str
    deltas: dict[str, DeltaResult]


class WorkloadRun(Result):
    run: str
    accelerator: str | None
    chosen_concurrency: int | None
    # What loaded the chosen cell: "8 users", or "20 req/s" for an open loop (whose concurrency is only its cap).
    chosen_load: str | None = None
    cost_per_1m_output_tokens_usd: float | None
    cost_per_1m_requests_usd: float | None
    always_on_monthly_usd: float | None
    scaled_to_zero_monthly_usd: float | None
    break_even_active_hours: float | None
    left_out: list[str]


class Workload(Result):
    api: str
    context: int
    max_tokens: int


class WorkloadComparison(Result):
    """One workload across three or more runs: each run's cost and the cheapest that meets the SLOs."""

    workload: Workload
    cheapest: str | None
    reason: str | None
    runs: list[WorkloadRun]


class Comparison(Result):
    a: str
    b: str
    cells: list[ComparedCell] | list[WorkloadComparison]
    markdown: str
    # With three or more files: every file, and `cells` holds one entry per workload (gemma_mcp/compare_runs.py).
    runs: list[str] | None = None


class Change(Result):
    """What a cloud-changing tool did, from Pulumi's own summary."""

    stack: str
    operation: str
    result: str
    resource_changes: dict[str, int]
    outputs: DeployedOutputs
    other_outputs: dict[str, JsonData] = {}
    secret_outputs: list[str]

    @pydantic.field_serializer("outputs")
    def _exported_only(self, outputs: DeployedOutputs) -> dict[str, object]:
        return outputs.model_dump(mode="json", by_alias=True, exclude_unset=True)


class OpsRun(Result):
    """One ops command's report, as `gemma-verify <command> --json` prints it."""

    stack: str
    exit_code: int
    passed: bool


class PreflightRun(OpsRun):
    command: Literal["preflight"] = "preflight"
    report: PreflightReport


class StatusRun(OpsRun):
    command: Literal["status"] = "status"
    report: StatusReport


class LogsRun(OpsRun):
    command: Literal["logs"] = "logs"
    report: LogsReport


class StackRead(Result):
    """A read-only look at one deployed stack (memory, models): the command's report and its exit code."""

    stack: str
    exit_code: int
    passed: bool
    message: str | None = None


class ModelsReport(StackRead):
    bucket: str
    report: BucketInventory | None


class MemoryReport(StackRead):
    report: MemoryLayout | None
