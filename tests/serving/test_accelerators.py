"""Every accelerator a stack file may name has exactly one facts entry (a GPU or a TPU chip)."""

from __future__ import annotations

from serving.shapes import Accelerator, accelerator_facts, resolved_shapes, shapes_table


def test_every_accelerator_has_one_table_entry() -> None:
    """An accelerator in both families (or neither) would give verify bench and the planner two answers, and a
    Cloud Run shape renting a TPU would be deployed as a GPU service."""
    gpus = {a for a in Accelerator.every() if accelerator_facts(a).family == "gpu"}
    tpus = {a for a in Accelerator.every() if accelerator_facts(a).family == "tpu"}
    assert gpus.isdisjoint(tpus)
    assert gpus | tpus == set(Accelerator.every())
    assert {shape.accelerator for shape in resolved_shapes(platform="cloud-run")} <= gpus
    for accelerator in Accelerator.every():
        found = resolved_shapes(accelerator=accelerator)
        assert found
        assert all(shape.accelerator is accelerator for shape in found)


def test_typed_views_carry_the_tables_figures() -> None:
    """A figure corrected in serving/data/shapes.json must reach the planner and the bench unchanged."""
    gpu_shapes = [shape for shape in resolved_shapes() if shape.family == "gpu"]
    assert gpu_shapes
    for gpu in gpu_shapes:
        facts = accelerator_facts(gpu.accelerator)
        assert gpu.memory_gib == facts.memory_gb.value * 10**9 / 2**30
        assert gpu.memory_bandwidth == facts.bandwidth_gb_per_s.value * 1e9
        assert gpu.peak_dense_bf16_flops == facts.peak_dense_tflops.value["bf16"] * 1e12
    for shape in resolved_shapes():
        if not shape.is_tpu:
            continue
        facts = accelerator_facts(shape.accelerator)
        assert shape.memory_gib == facts.memory_gib
        assert shape.runtime_version == (None if facts.runtime_version is None else facts.runtime_version.value)


def test_the_accelerators_are_the_tables() -> None:
    """A chip added to serving/data/shapes.json with a shape is an accelerator a stack can name without a code
    edit; one without a shape yet waits as facts, named by nothing, with a note that says why."""
    rented = {entry.accelerator for entry in shapes_table().shapes.values()}
    assert set(Accelerator.every()) == rented
    waiting = set(shapes_table().accelerators) - rented
    assert all(shapes_table().accelerators[key].note for key in waiting)
