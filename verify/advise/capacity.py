"""What a saved preflight answer knows about capacity, on the rows it names: a TPU row whose zone and tier
preflight found cannot be granted says so.

Why: advise ranks by price and speed from tables, and its cheapest TPU row may be a zone and tier where the slice
cannot be had now (no free quota, the zone does not list the slice or runtime); `gemma-verify preflight --stack
NAME --json` reads that zone by zone (verify/ops/tpu_availability.py). advise makes no Google call (it must stay
fast and work offline), so it reads the answer a user saved, `--capacity FILE`, and marks the rows it covers;
what the answer does not cover stays unmarked, and each mark names the file and whether its figures were read
live or are the static table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pydantic

from verify import UsageError
from verify.advise.report import AdviseReport, Row
from verify.ops.tpu_availability import TpuAvailability

# advise's provisioning names and the TPU stack file's tiers (stacks/tpu.py ProvisioningModel).
_TIER = {"on-demand": "guaranteed", "spot": "spot", "flex-start": "flex-start"}


def load_capacity(path: Path) -> TpuAvailability:
    """The TPU availability of a saved `preflight --json` document (or of a bare availability document);
    UsageError naming the file where it cannot be read or holds none."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"--capacity {path}: not a readable JSON document ({error})") from None
    found = document.get("tpu_availability", document) if isinstance(document, dict) else None
    if not isinstance(found, dict):
        raise UsageError(
            f"--capacity {path}: no TPU availability in it (save `gemma-verify preflight --stack NAME --json` of a "
            "TPU stack)"
        )
    try:
        return TpuAvailability.model_validate(found)
    except pydantic.ValidationError as error:
        raise UsageError(f"--capacity {path}: not a preflight TPU availability: {error.errors()[0]['msg']}") from None


def _mark(row: Row, answers: list[tuple[Path, TpuAvailability]]) -> Row:
    tier = _TIER.get(row.provisioning)
    if row.platform != "tpu" or row.zone is None or tier is None:
        return row
    for path, answer in answers:
        if answer.accelerator_type != row.shape:
            continue
        for zone_tier in answer.rows:
            if (zone_tier.zone, zone_tier.tier) == (row.zone, tier) and zone_tier.grantable is False:
                note = (
                    f"no capacity known: preflight ({path}, {answer.source}) says {row.zone} {tier} cannot be "
                    f"granted now: {zone_tier.answer}"
                )
                return row.model_copy(update={"caveats": (*row.caveats, note)})
    return row


def with_capacity(report: AdviseReport, answers: list[tuple[Path, TpuAvailability]]) -> AdviseReport:
    """The report with each TPU row that a saved answer says cannot be granted in its zone and tier marked."""
    if not answers:
        return report
    return report.model_copy(update={"rows": tuple(_mark(row, answers) for row in report.rows)})
