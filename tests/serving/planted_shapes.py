"""Plant a TPU generation the shapes table does not hold, so a test shows a reader branches on the table's facts
(its family, its zones, its slices) rather than on the names of the generations shipped today."""

from __future__ import annotations

import pytest

import serving.shapes
from serving.shapes import Places, ShapesTable, shapes_table

# A generation no Google page names: a reader that still spells today's generations cannot know it.
PLANTED_TPU = "tpu-v99"
PLANTED_SLICE = "v99-1"
PLANTED_ZONE = "europe-west99-a"
PLANTED_GKE_TYPE = "ct99-standard-1t"


def planted_table() -> ShapesTable:
    """Today's table plus one TPU generation (a copy of the first TPU entry's facts under a new name) rented as
    one single-chip TPU VM slice in a zone of its own."""
    table = shapes_table()
    tpu_key, tpu = next((key, facts) for key, facts in table.accelerators.items() if facts.family == "tpu")
    tpu_slice = next(
        entry for entry in table.shapes.values() if entry.platform == "tpu-vm" and entry.accelerator == tpu_key
    )
    where = Places(
        value=(PLANTED_ZONE,),
        source="planted by a test",
        read=tpu_slice.where.read if tpu_slice.where else tpu.memory_gb.read,
    )
    planted_slice = tpu_slice.model_copy(
        update={
            "name": PLANTED_SLICE,
            "accelerator": PLANTED_TPU,
            "accelerators": 1,
            "where": where,
            "flex_start_zones": where,
        }
    )
    return table.model_copy(
        update={
            "accelerators": {**table.accelerators, PLANTED_TPU: tpu.model_copy(update={"display_name": "TPU v99"})},
            "shapes": {**table.shapes, PLANTED_SLICE: planted_slice},
        }
    )


def plant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader of serving/shapes.py sees the planted table until the test ends."""
    table = planted_table()
    monkeypatch.setattr(serving.shapes, "shapes_table", lambda: table)


def gke_only_tpu_table() -> ShapesTable:
    """Today's table plus one TPU generation with no TPU VM runtime (runtimeVersion dropped), rented only as a
    GKE machine type (a copy of the first GKE TPU machine type under a new name): how Google sells a TPU through
    GKE alone."""
    table = shapes_table()
    tpu_key, tpu = next((key, facts) for key, facts in table.accelerators.items() if facts.family == "tpu")
    gke_type = next(
        entry for entry in table.shapes.values() if entry.platform == "gke" and entry.accelerator == tpu_key
    )
    planted_type = gke_type.model_copy(update={"name": PLANTED_GKE_TYPE, "accelerator": PLANTED_TPU})
    return table.model_copy(
        update={
            "accelerators": {
                **table.accelerators,
                PLANTED_TPU: tpu.model_copy(update={"display_name": "TPU v99", "runtime_version": None}),
            },
            "shapes": {**table.shapes, PLANTED_GKE_TYPE: planted_type},
        }
    )
