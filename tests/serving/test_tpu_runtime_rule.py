"""A TPU sold through GKE only has no TPU VM runtime: the table accepts it there and refuses it on a TPU VM."""

from __future__ import annotations

import pytest

from serving.shapes import ResolvedShape, ShapesTable
from tests.serving.planted_shapes import PLANTED_GKE_TYPE, PLANTED_TPU, gke_only_tpu_table


def _validated(table: ShapesTable) -> ShapesTable:
    """The table through its validator again (model_copy skips it), as serving/data/shapes.json would load."""
    return ShapesTable.model_validate(table.model_dump())


def test_a_gke_only_tpu_needs_no_runtime_version() -> None:
    """A TPU Google offers through GKE alone (no runtimeVersion on any page) must not stop the package from
    importing, as it did when every TPU with a shape had to name a TPU VM runtime."""
    table = _validated(gke_only_tpu_table())
    assert table.accelerators[PLANTED_TPU].runtime_version is None
    assert table.shapes[PLANTED_GKE_TYPE].platform == "gke"


def test_a_tpu_vm_shape_without_a_runtime_is_refused() -> None:
    """A TPU VM slice of a chip with no runtime would reach the queued-resource API with none: the table refuses
    it when it loads, naming the entry."""
    table = gke_only_tpu_table()
    slice_ = next(entry for entry in table.shapes.values() if entry.platform == "tpu-vm")
    on_vm = table.model_copy(
        update={"shapes": {**table.shapes, "v99-vm": slice_.model_copy(update={"accelerator": PLANTED_TPU})}}
    )
    with pytest.raises(ValueError, match=f"accelerators.{PLANTED_TPU}: a TPU rented as a TPU VM needs runtime"):
        _validated(on_vm)


def test_a_tpu_vm_stack_cannot_read_a_missing_runtime() -> None:
    """A TPU VM stack asking a GKE-only chip for its runtime gets an error naming the chip, not None."""
    table = gke_only_tpu_table()
    entry = table.shapes[PLANTED_GKE_TYPE]
    assert entry.family is not None
    # Resolved by hand: the planted table is not serving/data/shapes.json, which resolved() reads.
    planted = ResolvedShape(
        entry=entry, chip=table.accelerators[PLANTED_TPU], series=table.machine_families[entry.family]
    )
    with pytest.raises(ValueError, match="TPU v99 has no TPU VM runtime: it is served on GKE only"):
        _ = planted.tpu_vm_runtime
