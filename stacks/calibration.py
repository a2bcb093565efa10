"""Calibration records: what vLLM itself logged at start-up for one accelerator and checkpoint.

Why: the planner's runtime overhead (activation peak, CUDA graphs, libraries) is an estimate, and a
checkpoint profile's weight bytes may be one too. Once a stack has started, vLLM's own lines say both
("Model loading took X GiB memory", "Available KV cache memory: Y GiB"); `gemma-verify memory --save`
writes them here, and the planner (stacks/capacity.py) then uses the measured weights and the measured
overhead (usable memory - weights - available KV) for that accelerator and checkpoint, saying so in
its assumptions. A record states the conditions it was measured under; a stack whose conditions differ
still uses it, and the preview says which differ.

Records live in the project folder, one file per accelerator and checkpoint:
``calibration/<accelerator>/<checkpoint path with / as __>.json``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pydantic

from serving.input_files import CONFIG_FILE_MAX_BYTES, InputFileError, read_text_file
from serving.planner import PlanInputs
from serving.units import GIB

CALIBRATION_DIR = "calibration"


class CalibrationRecord(pydantic.BaseModel):
    """vLLM's start-up memory lines for one accelerator and checkpoint, and the settings they were read under."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    accelerator: str
    checkpoint: str  # the model's bucket path (model.path)
    weights_gib: float = pydantic.Field(gt=0)  # "Model loading took X GiB memory"
    available_kv_cache_gib: float = pydantic.Field(ge=0)  # "Available KV cache memory: Y GiB"
    kv_cache_tokens: int | None = None  # "<device> KV cache size: N tokens"
    max_concurrency: float | None = None  # "Maximum concurrency for L tokens per request: Cx"
    # The conditions: the usable memory the engine was given (gpu_memory_utilization x device memory x TP),
    # and the settings that change the overhead.
    usable_gib: float = pydantic.Field(gt=0)
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    kv_cache_dtype: str
    vllm_version: str | None = None
    source: str  # where the lines were read (log filter, revision or node, timestamps)
    recorded_at: str
    # The revision (or node container) the lines came from, the first line's time, and the lines themselves:
    # what a reader checks a record against (records written before these were kept have none).
    source_revision: str | None = None
    source_first_line_at: str | None = None
    source_lines: tuple[str, ...] = ()

    @property
    def runtime_overhead_gib(self) -> float:
        """Memory vLLM kept besides weights and KV cache: what the planner otherwise estimates."""
        return max(self.usable_gib - self.weights_gib - self.available_kv_cache_gib, 0.0)


def record_path(root: Path, accelerator: str, checkpoint: str) -> Path:
    return root / CALIBRATION_DIR / accelerator / f"{checkpoint.strip('/').replace('/', '__')}.json"


def load_record(root: Path, accelerator: str, checkpoint: str) -> CalibrationRecord | None:
    """The record for this accelerator and checkpoint; None when there is none. A record that does not
    parse is an error naming the file (a silent fallback would hide a broken calibration)."""
    path = record_path(root, accelerator, checkpoint)
    if not path.exists():
        return None
    try:
        return CalibrationRecord.model_validate_json(read_text_file(path, max_bytes=CONFIG_FILE_MAX_BYTES))
    except InputFileError as error:
        raise ValueError(f"not a calibration record: {error}") from None
    except pydantic.ValidationError as error:
        raise ValueError(f"{path}: not a calibration record ({error})") from None


def save_record(root: Path, record: CalibrationRecord) -> Path:
    path = record_path(root, record.accelerator, record.checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def differences(
    record: CalibrationRecord,
    *,
    gpu_memory_utilization: float,
    max_model_len: int,
    max_num_seqs: int,
    kv_cache_dtype: str,
) -> list[str]:
    """The settings in which a stack differs from the record's conditions (the overhead may differ too)."""
    now = {
        "gpuMemoryUtilization": (record.gpu_memory_utilization, gpu_memory_utilization),
        "maxModelLen": (record.max_model_len, max_model_len),
        "maxNumSeqs": (record.max_num_seqs, max_num_seqs),
        "kvCacheDtype": (record.kv_cache_dtype, kv_cache_dtype),
    }
    return [f"{key} {then} -> {current}" for key, (then, current) in now.items() if then != current]


def calibrate(
    inputs: PlanInputs,
    assumptions: list[str],
    *,
    root: Path,
    accelerator: str,
    checkpoint: str,
    overhead_given: bool,
) -> tuple[PlanInputs, list[str]]:
    """The planner's inputs with a record's measured weights and overhead, when there is a record.

    The weights vLLM logged include a drafter's, so the target's are the measured total less the drafter
    profile's. An overhead set in the stack file (capacity.runtimeOverheadGib) wins over the record's.
    """
    record = load_record(root, accelerator, checkpoint)
    if record is None:
        return inputs, assumptions
    drafter_bytes = inputs.drafter.weight_bytes if inputs.drafter is not None else 0
    weights = max(round(record.weights_gib * GIB) - drafter_bytes, 1)
    update: dict[str, object] = {"model": dataclasses.replace(inputs.model, weight_bytes=weights)}
    notes = list(assumptions)
    where = record_path(Path(), accelerator, checkpoint)
    if not overhead_given:
        update["runtime_overhead_bytes"] = round(record.runtime_overhead_gib * GIB)
        notes = [line for line in notes if not line.startswith("runtime overhead ")]
        notes.append(
            f"runtime overhead {record.runtime_overhead_gib:.2f} GiB besides weights and KV cache (measured: {where})"
        )
    changed = differences(
        record,
        gpu_memory_utilization=inputs.gpu_memory_utilization,
        max_model_len=inputs.max_model_len,
        max_num_seqs=inputs.max_num_seqs,
        kv_cache_dtype=inputs.kv_cache_dtype,
    )
    notes.append(
        f"weights {record.weights_gib:.2f} GiB as vLLM logged them ({where}, {record.recorded_at})"
        + (f"; measured under other settings: {', '.join(changed)}" if changed else "")
    )
    return dataclasses.replace(inputs, **update), notes  # type: ignore[arg-type]
