"""Every accelerator a stack file may name has exactly one facts entry (a GPU for Cloud Run or a TPU chip)."""

from __future__ import annotations

from serving.accelerators import CLOUD_RUN_GPUS, TPU_CHIPS, Accelerator, facts_of


def test_every_accelerator_has_one_table_entry() -> None:
    """An accelerator in both tables (or neither) would give verify bench and the planner two answers."""
    assert set(CLOUD_RUN_GPUS).isdisjoint(TPU_CHIPS)
    assert set(CLOUD_RUN_GPUS) | set(TPU_CHIPS) == set(Accelerator)
    for accelerator in Accelerator:
        assert facts_of(accelerator).accelerator is accelerator
