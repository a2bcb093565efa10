"""A stack's bill names the shape it bills: the chips and accelerator it repeats agree with the shapes table, or
the bill is refused where it is made, naming the field, instead of pricing a shape nobody rents."""

from __future__ import annotations

import pytest

from serving.pricing import CloudRunBilling, TpuBilling, parse_billing
from serving.shapes import resolved_shapes

SLICE = resolved_shapes(platform="tpu-vm")[0]
GPU_MACHINE = next(shape for shape in resolved_shapes(platform="gke") if not shape.is_tpu)
CLOUD_RUN = resolved_shapes(platform="cloud-run")[0]


def _gke(**changes: object) -> dict[str, object]:
    bill: dict[str, object] = {
        "kind": "gke",
        "machineType": GPU_MACHINE.name,
        "accelerator": str(GPU_MACHINE.accelerator),
        "acceleratorsPerNode": GPU_MACHINE.chips,
        "provisioningModel": GPU_MACHINE.provisioning[0],
        "region": None,
        "minNodes": 1,
        "maxNodes": 1,
        "clusterCreated": False,
    }
    return bill | changes


def test_a_tpu_bill_with_chips_the_slice_lacks_is_refused() -> None:
    """A TPU node billed for more chips than its slice has would show the plan a price several times too high."""
    with pytest.raises(ValueError, match=rf"TpuBilling\.chips {SLICE.chips + 1} disagrees .* {SLICE.name} has"):
        TpuBilling(accelerator_type=SLICE.name, chips=SLICE.chips + 1, provisioning_model="spot", region="us-east5")


def test_a_tpu_bill_of_a_machine_type_is_refused() -> None:
    """A TPU VM bill names a slice: a GKE machine type there is another platform's shape, priced by other rates."""
    with pytest.raises(ValueError, match=rf"TpuBilling\.accelerator_type '{GPU_MACHINE.name}' is a gke shape"):
        TpuBilling(accelerator_type=GPU_MACHINE.name, chips=1, provisioning_model="spot", region=None)


def test_a_stale_gke_billing_output_is_refused_naming_the_field() -> None:
    """`verify bench` prices a deployed stack from its `billing` output: one whose GPUs per node or accelerator
    disagree with the table (or whose machine type the table no longer has) is refused, not priced."""
    with pytest.raises(ValueError, match=r"GkeBilling\.accelerators_per_node .* disagrees"):
        parse_billing(_gke(acceleratorsPerNode=GPU_MACHINE.chips + 1))
    other = next(shape.accelerator for shape in resolved_shapes() if shape.accelerator != GPU_MACHINE.accelerator)
    with pytest.raises(ValueError, match=r"GkeBilling\.accelerator .* disagrees"):
        parse_billing(_gke(accelerator=str(other)))
    with pytest.raises(ValueError, match=r"GkeBilling\.machine_type 'no-such-machine'"):
        parse_billing(_gke(machineType="no-such-machine"))
    assert parse_billing(_gke()).shape is GPU_MACHINE


def test_a_cloud_run_bill_of_a_gpu_cloud_run_does_not_attach_is_refused() -> None:
    """Cloud Run attaches only its own GPUs: a bill for another accelerator would price an instance that cannot
    exist."""
    elsewhere = next(
        shape for shape in resolved_shapes() if not resolved_shapes(platform="cloud-run", accelerator=shape.accelerator)
    )
    with pytest.raises(ValueError, match=r"CloudRunBilling\.accelerator"):
        CloudRunBilling(
            accelerator=elsewhere.accelerator, region=None, cpu=8, memory_gib=32, gpu_zonal_redundancy=False
        )
    bill = CloudRunBilling(
        accelerator=CLOUD_RUN.accelerator, region=None, cpu=8, memory_gib=32, gpu_zonal_redundancy=False
    )
    assert bill.shape is CLOUD_RUN
