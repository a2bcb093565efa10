"""benchmarks/preview_time.py times every stack file against the budget its platform has."""

from __future__ import annotations

from benchmarks.preview_time import BUDGET_SECONDS, GKE_BUDGET_SECONDS, budget, stack_files


def test_every_shipped_stack_and_example_is_timed_with_its_budget() -> None:
    """Guards against a benchmark that skips the examples, or holds a GKE plan to a Cloud Run budget."""
    files = stack_files()
    assert {"l4", "rtx6000", "tpu-v6e", "gke-l4x4", "gke-tpu-v6e"} <= set(files)
    budgets = {stack: budget(path) for stack, path in files.items()}
    assert budgets["l4"] == budgets["rtx6000"] == budgets["tpu-v6e"] == BUDGET_SECONDS
    assert budgets["gke-l4x4"] == budgets["gke-tpu-v6e"] == GKE_BUDGET_SECONDS
