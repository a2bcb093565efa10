"""`verify memory` as functions: ``read_memory(stack, loaded, MemoryOptions) -> MemoryLayout`` (vLLM's start-up
memory lines beside the plan) and ``save_calibration`` (``--save``: the lines as a calibration record the
planner then uses). verify/memory/cli.py maps flags onto the options and renders.

Why `--save` checks what it saves: the planner trusts a record over its own estimate, so a forged
"Model loading took 0.5 GiB" once made a stack vLLM cannot start preview as fitting. A record is written
only from the stack's own revision or node (`MemoryLayout.source_problem`), from vLLM's own logger lines
(none held apart as unattributed), and when its figures are plausible for the checkpoint and accelerator:
weights within WEIGHTS_RATIO of what the catalog states, weights plus KV cache within the usable memory,
and the KV line's context the stack's `maxModelLen`. It records where it came from (revision, first line's
time, the lines).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pydantic

from preview.stack_file import project_root
from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError
from serving.units import GIB
from stacks.calibration import CalibrationRecord, record_path, save_record
from stacks.capacity import stated_weight_bytes
from stacks.loading import LoadedStack
from verify import UsageError
from verify.memory.layout import MemoryLayout, memory_layout
from verify.ops.google import apis_from_environment
from verify.ops.stack import OpsStack

DEFAULT_SINCE_S = 7 * 24 * 3600
# How far measured weights may be from the catalog's stated footprint: vLLM's "Model loading took" counts
# what it allocated (the 12B QAT: 10.43 GiB logged, 10.52 stated), so 0.6x-1.6x leaves room for a profile's
# error, and not for a line claiming a tenth of the checkpoint.
WEIGHTS_RATIO = (0.6, 1.6)
# Rounding slack on the usable-memory bound (vLLM rounds its GiB figures to two decimals).
USABLE_SLACK = 1.02


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


def calibration_record(
    layout: MemoryLayout, loaded: LoadedStack, *, now: datetime.datetime, root: Path | None = None
) -> CalibrationRecord:
    """The record ``--save`` writes; UsageError when the lines it needs were not logged, are not the stack's
    own, or are not plausible for its checkpoint and accelerator (the module says why)."""
    measured = layout.measured
    if measured.weights_gib is None or measured.available_kv_cache_gib is None:
        raise UsageError(
            "--save needs both 'Model loading took ... GiB memory' and 'Available KV cache memory' from the "
            "server's log; this start-up did not log both (see the lines above)"
        )
    plan = loaded.capacity.plan
    if plan is None or plan.usable_bytes is None:
        raise UsageError("--save needs the planner's usable memory for this stack, and it has no plan")
    stated = stated_weight_bytes(loaded.settings, root=root if root is not None else project_root()) / GIB
    problems = [
        *([f"the lines' source: {layout.source_problem}"] if layout.source_problem else []),
        *(
            [f"{len(measured.unattributed)} line(s) carry the figures' words outside vLLM's own log lines for them"]
            if measured.unattributed
            else []
        ),
        *implausible(measured.weights_gib, measured.available_kv_cache_gib, stated, plan.usable_bytes / GIB),
        *(
            [f"the KV line is for {measured.max_model_len:,} tokens, the stack's maxModelLen is {max_len:,}"]
            if measured.max_model_len is not None
            and measured.max_model_len != (max_len := loaded.settings.vllm.max_model_len)
            else []
        ),
    ]
    if problems:
        raise UsageError(
            "--save refused: these lines cannot calibrate the planner (" + "; ".join(problems) + "). Nothing was "
            "written; the plan keeps its estimate"
        )
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
        source_revision=layout.source,
        source_first_line_at=layout.first_line_at,
        source_lines=tuple(measured.lines),
    )


def implausible(weights_gib: float, kv_gib: float, stated_gib: float, usable_gib: float) -> list[str]:
    """Why measured weights and KV memory cannot be this checkpoint's on this accelerator (empty: plausible)."""
    low, high = WEIGHTS_RATIO
    problems = []
    if not low * stated_gib <= weights_gib <= high * stated_gib:
        problems.append(
            f"weights {weights_gib:g} GiB against the catalog's {stated_gib:.2f} GiB for this checkpoint (outside "
            f"{low:g}x-{high:g}x)"
        )
    if weights_gib + kv_gib > usable_gib * USABLE_SLACK:
        problems.append(
            f"weights {weights_gib:g} GiB + KV cache {kv_gib:g} GiB exceed the {usable_gib:.2f} GiB this "
            "accelerator gives vLLM"
        )
    return problems


def save_calibration(
    layout: MemoryLayout, loaded: LoadedStack, *, root: Path | None = None, now: datetime.datetime | None = None
) -> SavedRecord:
    """Write the layout's lines as the calibration record for its accelerator and checkpoint."""
    where = root if root is not None else project_root()
    record = calibration_record(layout, loaded, now=now or datetime.datetime.now(datetime.UTC), root=where)
    path = save_record(where, record)
    shown = record_path(where, record.accelerator, record.checkpoint).relative_to(where)
    return SavedRecord(record, path, shown)
