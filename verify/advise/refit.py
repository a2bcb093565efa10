"""`gemma-verify calibrate --refit`: the latency model's factors fitted again, with the project's speed records.

Why: the factors every estimate uses (serving/data/latency-efficiency.json) were fitted to public write-ups
measured by hand; a project's own trusted bench cells (`gemma-verify calibrate RESULTS --stack NAME`, in
calibration/speed/) are better evidence for its own models and shapes. The refit keeps the write-up figures as
priors, each weighted by its stated error, adds each record's request rate, mean TTFT and mean TPOT (10 % each),
fits the same few factors (stacks/latency_fit.py), and writes them with their provenance (the records' files and
SHA-256, the command, the day) where every estimate reads them. The report names the factors that moved and the
figures whose predictions moved most.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from preview.stack_file import project_root
from serving import speed_facts
from serving.speed_facts import FittedEfficiency, Provenance, RecordSource
from serving.speed_records import SPEED_DIR, SpeedRecord
from serving.writeup_figures import writeup_figures
from stacks.latency_fit import (
    LeaveOneOut,
    Params,
    Target,
    figure_targets,
    fit,
    fit_figures,
    fitted_record,
    leave_one_out,
    predict,
    record_targets,
    rounded_params,
)
from verify.advise.records import trusted_records

COMMAND = "gemma-verify calibrate --refit"
# A prediction that moved by more than this (|error| before vs after, in points) is named in the report.
MOVED = 0.05


@dataclass
class Refit:
    """What a refit found: the factors before and after, the targets whose predictions moved, and the record."""

    before: Params
    after: Params
    record: FittedEfficiency
    moved: list[str] = field(default_factory=list)
    records: int = 0
    written: Path | None = None


def _sources(root: Path, records: list[SpeedRecord]) -> tuple[RecordSource, ...]:
    """Each speed-record file the refit read, with its SHA-256 and the number of its records."""
    folder = root / SPEED_DIR
    counts: dict[str, int] = {}
    for record in records:
        key = f"{record.model}--{record.variant}--{record.shape}.jsonl"
        counts[key] = counts.get(key, 0) + 1
    return tuple(
        RecordSource(
            file=str((folder / name).relative_to(root)),
            sha256=hashlib.sha256((folder / name).read_bytes()).hexdigest(),
            cells=cells,
        )
        for name, cells in sorted(counts.items())
        if (folder / name).is_file()
    )


def _moved(targets: list[Target], before: Params, after: Params) -> list[str]:
    """The targets whose |error| changed by more than ``MOVED``, largest first, as report lines."""
    found = []
    for target in targets:
        old, new = target.predict(before), target.predict(after)
        if old is None or new is None or not target.value:
            continue
        was, now = abs(old / target.value - 1), abs(new / target.value - 1)
        if abs(now - was) > MOVED:
            found.append((abs(now - was), f"{target.id}: |error| {was:.0%} -> {now:.0%}"))
    return [line for _, line in sorted(found, reverse=True)]


def run_refit(
    root: Path | None = None,
    *,
    write: bool = True,
    with_leave_one_out: bool = True,
    priors: bool = True,
    today: datetime.date | None = None,
) -> Refit:
    """Fit the factors to the write-up figures (``priors``) and the project's speed records, and (``write``) store
    them in serving/data/latency-efficiency.json with their provenance."""
    project = project_root(root)
    # Only records traceable to their unchanged results file and physically possible (verify/advise/records.py).
    records = trusted_records(project).records
    data = writeup_figures()
    before = Params.of(speed_facts.fitted_efficiency())
    figures = figure_targets(data, fit_figures(data)) if priors else []
    measured = record_targets(records)
    if not measured and not figures:
        raise ValueError("nothing to fit: no speed records in calibration/speed/ and no priors")
    after = rounded_params(fit([*figures, *measured], start=before))
    predictions = [predict(data, figure, after) for figure in data.figures]
    held_out = leave_one_out(data, measured) if with_leave_one_out else LeaveOneOut({}, [])
    moved = _moved([*figures, *measured], before, after)
    provenance = Provenance(
        command=COMMAND, figures=len(figures), records=_sources(project, records), moved=tuple(moved[:20])
    )
    day = today or datetime.datetime.now(tz=datetime.UTC).date()
    record = fitted_record(data, after, predictions, held_out, day, provenance)
    if not with_leave_one_out:  # keep the stored left-out errors: they describe the method, not these factors
        stored = speed_facts.fitted_efficiency()
        record = record.model_copy(
            update={"errors_leave_one_out": stored.errors_leave_one_out, "errors_by_kind": stored.errors_by_kind}
        )
    answer = Refit(before=before, after=after, record=record, moved=moved, records=len(records))
    if write:
        speed_facts.EFFICIENCY_FILE.write_text(
            json.dumps(record.model_dump(mode="json", by_alias=True), indent=2) + "\n"
        )
        speed_facts.fitted_efficiency.cache_clear()
        answer.written = speed_facts.EFFICIENCY_FILE
    return answer


def render(answer: Refit) -> str:
    """The factors before and after, the figures that moved, where it was written."""
    lines = [
        f"refit on {answer.record.provenance.figures} write-up figures (priors) and {answer.records} speed records"
    ]
    for family, factors in answer.after.families:
        was = answer.before.family(family)
        lines.append(
            f"  {family.upper()}: compute {was.compute:.3f} -> {factors.compute:.3f}, bandwidth {was.bandwidth:.3f} -> "
            f"{factors.bandwidth:.3f}, forward pass {was.step_ms:.2f} -> {factors.step_ms:.2f} ms"
        )
    clients = ", ".join(f"{name} {value * 1000:.0f} ms" for name, value in answer.after.clients)
    lines.append(
        f"  host {answer.before.host_us_per_token:.1f} -> {answer.after.host_us_per_token:.1f} us a prompt token; "
        f"clients {clients}"
    )
    lines += [
        f"  read {source.file} ({source.cells} records, sha256 {source.sha256[:12]})"
        for source in answer.record.provenance.records
    ]
    if answer.moved:
        lines += ["figures whose prediction moved:", *(f"  {line}" for line in answer.moved)]
    else:
        lines.append("no figure's prediction moved by more than 5 points")
    if answer.written is not None:
        lines.append(f"wrote {answer.written}: every estimate (advise, make matrix, the MCP tools) reads it")
    return "\n".join(lines) + "\n"
