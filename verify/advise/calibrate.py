"""`gemma-verify calibrate RESULTS.jsonl --stack NAME`: a bench results file's trusted cells as speed records.

Why a command: a record must say what served the cell (the stack's catalog model and variant, shape, vLLM
version, the speed-relevant serving arguments) and where its figures come from (the file and its SHA-256).
Only trusted cells within the physical ceilings of what the stack serves become records; the others are refused
with their reason, so an impossible number never calibrates anything. `advise` then shows a record's figures
beside its estimate (serving/speed_records.py). Exit codes: 0 records written (or none to write), 1 every
measured cell refused, 2 usage errors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from preview.stack_file import project_root
from serving.catalog import find_checkpoint
from serving.speed_records import SpeedRecord, save_speed_records, speed_args
from stacks.catalog_checks import Served, served_checkpoint
from verify import UsageError
from verify.advise.records import physical_problem
from verify.bench.caveats import untrusted_reason
from verify.bench.results import CellRecord, load_results
from verify.stack_settings import load_stack_file


@dataclass
class Calibration:
    records: list[SpeedRecord] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)


def calibrate(results: Path, stack: str, *, root: Path | None = None) -> Calibration:
    """Records of ``results``'s trusted cells for what ``stack`` serves, written under the project's calibration/."""
    project = project_root(root)
    settings = load_stack_file(stack, project).settings
    served = served_checkpoint(settings.model)
    if not isinstance(served, Served):
        raise UsageError(f"stack {stack!r} does not serve a catalog checkpoint: no speed record can name its model")
    billing = settings.billing()
    args = speed_args(settings.serve_args())
    digest = hashlib.sha256(results.read_bytes()).hexdigest()
    shown = str(results.resolve().relative_to(project)) if results.resolve().is_relative_to(project) else str(results)
    speculative = 0 if "--speculative-config" not in args else None
    answer = Calibration()
    for cell in load_results(results).records:
        if not cell.measured:
            continue
        claimed = cell.model_copy(
            update={
                "accelerator": cell.accelerator or settings.accelerator,
                "accelerator_count": cell.accelerator_count or billing.chips_per_unit,
                "speculative_tokens": cell.speculative_tokens if cell.speculative_tokens is not None else speculative,
            }
        )
        reason = untrusted_reason(claimed) or _not_the_stacks_model(cell.model, served, settings.model.served_name)
        if reason is not None:
            answer.refused.append(f"{cell.short_label}: {reason}")
            continue
        shape, chips = billing.shape.name, billing.chips_per_unit
        record = _record(claimed, served, shape, settings.accelerator, chips, args, shown, digest)
        # The stack's model is what the record claims: its ceilings are the ones that bind (a tiny test model's
        # cell would otherwise pass as the 12B's at several times the 12B's bandwidth ceiling).
        impossible = physical_problem(record)
        if impossible is not None:
            answer.refused.append(f"{cell.short_label}: {impossible}")
            continue
        answer.records.append(record)
    answer.written = save_speed_records(project, answer.records)
    return answer


def _not_the_stacks_model(name: str, served: Served, served_name: str | None) -> str | None:
    """Why a cell's served model name is not the stack's model, or None where it is (the stack's served name, or a
    name or repo id the catalog resolves to the stack's model)."""
    if name in {served_name, served.model.id}:
        return None
    found = find_checkpoint(name)
    if found is not None and found[0].id == served.model.id:
        return None
    return (
        f"its served model {name!r} is not the stack's model {served.model.id} (served as {served_name!r}): a "
        "record of another model's run would calibrate this one with its speed"
    )


# The percentiles a record keeps the cell's interval for: those it keeps the value of.
RECORDED_INTERVALS = ("p95_ttft_ms", "p95_tpot_ms")


def _record(  # noqa: PLR0917 - one cell and what the stack says about it
    cell: CellRecord,
    served: Served,
    shape: str,
    accelerator: str,
    chips: int,
    args: dict[str, str],
    source: str,
    digest: str,
) -> SpeedRecord:
    completed = max(cell.completed, 1)
    return SpeedRecord(
        model=served.model.id,
        variant=served.variant_name,
        shape=shape,
        accelerator=accelerator,
        chips=chips,
        vllm_version=cell.vllm_version,
        serving_args=args,
        prompt_tokens=max(round(cell.actual_context or cell.requested_context), 1),
        output_tokens=max(round(cell.total_output_tokens / completed), 1),
        concurrency=cell.max_concurrency,
        request_throughput=cell.request_throughput or 0.0,
        output_throughput=cell.output_throughput or 0.0,
        p95_ttft_ms=cell.p95_ttft_ms,
        mean_ttft_ms=cell.mean_ttft_ms,
        mean_tpot_ms=cell.mean_tpot_ms,
        p95_tpot_ms=cell.p95_tpot_ms,
        speculative_tokens=cell.speculative_tokens or 0,
        spec_decode_drafts=cell.spec_decode_drafts,
        spec_decode_accepted=cell.spec_decode_accepted_tokens,
        prefix_cache_hit_rate=cell.prefix_cache_hit_rate,
        completed=cell.completed,
        ci={name: cell.ci[name] for name in RECORDED_INTERVALS if name in cell.ci},
        measured_at=cell.timestamp,
        source_file=source,
        source_sha256=digest,
    )
