"""`verify memory` as functions: ``read_memory(stack, loaded, MemoryOptions) -> MemoryLayout`` (vLLM's start-up
memory lines beside the plan) and ``save_calibration`` (``--save``: the lines as a calibration record the
planner then uses). verify/memory/cli.py maps flags onto the options and renders.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pydantic

from preview.stack_file import project_root
from stacks.calibration import CalibrationRecord, record_path, save_record
from stacks.loading import LoadedStack
from verify import UsageError
from verify.memory.layout import MemoryLayout, memory_layout
from verify.ops.google import CannotCheckError, GoogleApiError, GoogleApis, apis_from_environment
from verify.ops.stack import OpsStack

GIB = 1 << 30
DEFAULT_SINCE_S = 7 * 24 * 3600


class MemoryOptions(pydantic.BaseModel):
    """How far back to look for the newest start-up's lines, in seconds."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    since_s: int = pydantic.Field(default=DEFAULT_SINCE_S, gt=0)


class LogsUnreadableError(Exception):
    """Cloud Logging could not be read (no credentials, no permission): the command exits 2."""


@dataclass(frozen=True)
class SavedRecord:
    record: CalibrationRecord
    path: Path  # where it was written
    shown: Path  # the same, relative to the project root


def read_memory(
    stack: OpsStack,
    loaded: LoadedStack,
    options: MemoryOptions,
    *,
    open_apis: Callable[[], GoogleApis] = apis_from_environment,
) -> MemoryLayout:
    """The newest start-up's memory lines beside the planner's figures; ``LogsUnreadableError`` when Cloud
    Logging cannot be read."""
    try:
        with open_apis() as apis:
            return memory_layout(apis, stack, loaded, since_s=options.since_s)
    except (CannotCheckError, GoogleApiError) as error:
        raise LogsUnreadableError(f"cannot read the logs of {stack.name}: {error}") from error


def calibration_record(layout: MemoryLayout, loaded: LoadedStack, *, now: datetime.datetime) -> CalibrationRecord:
    """The record ``--save`` writes; UsageError when the lines it needs were not logged."""
    measured = layout.measured
    if measured.weights_gib is None or measured.available_kv_cache_gib is None:
        raise UsageError(
            "--save needs both 'Model loading took ... GiB memory' and 'Available KV cache memory' from the "
            "server's log; this start-up did not log both (see the lines above)"
        )
    plan = loaded.capacity.plan
    if plan is None or plan.usable_bytes is None:
        raise UsageError("--save needs the planner's usable memory for this stack, and it has no plan")
    vllm = loaded.settings.vllm
    return CalibrationRecord(
        accelerator=layout.accelerator,
        checkpoint=layout.checkpoint,
        weights_gib=measured.weights_gib,
        available_kv_cache_gib=measured.available_kv_cache_gib,
        kv_cache_tokens=measured.kv_cache_tokens,
        max_concurrency=measured.max_concurrency,
        usable_gib=round(plan.usable_bytes / GIB, 3),
        gpu_memory_utilization=vllm.gpu_memory_utilization,
        max_model_len=vllm.max_model_len,
        max_num_seqs=vllm.max_num_seqs,
        kv_cache_dtype=vllm.kv_cache_dtype,
        source=f"Cloud Logging, stack {layout.stack}, {layout.source} at {layout.first_line_at}",
        recorded_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def save_calibration(
    layout: MemoryLayout, loaded: LoadedStack, *, root: Path | None = None, now: datetime.datetime | None = None
) -> SavedRecord:
    """Write the layout's lines as the calibration record for its accelerator and checkpoint."""
    where = root if root is not None else project_root()
    record = calibration_record(layout, loaded, now=now or datetime.datetime.now(datetime.UTC))
    path = save_record(where, record)
    shown = record_path(where, record.accelerator, record.checkpoint).relative_to(where)
    return SavedRecord(record, path, shown)
