"""One price per shape: the matrix and advise price a Cloud Run GPU at the size the shipped stacks deploy (the
shapes table's deployedSize)."""

from __future__ import annotations

import json

import pytest

from preview.stack_file import read_stack_config
from serving.catalog import catalog_model
from serving.shapes import Accelerator, deployed_size
from stacks.fit import SHAPES, Workload, fit
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("stack", "accelerator"), [("l4", Accelerator("nvidia-l4")), ("rtx6000", Accelerator("nvidia-rtx-pro-6000"))]
)
def test_the_shipped_stacks_deploy_the_priced_size(stack: str, accelerator: Accelerator) -> None:
    """The matrix said $1.05/h for an L4 (4 vCPU / 16 GiB) while the shipped stack costs $1.42/h (8 / 32): a user
    comparing the two could not tell which to believe. Both now price the shipped stack's instance."""
    values = read_stack_config(ROOT, stack).values
    assert values["gemma-serving:accelerator"] == accelerator
    size = json.loads(values["gemma-serving:cloudRun"])
    deployed = deployed_size(accelerator)
    assert (size["cpu"], size["memoryGib"]) == (deployed.vcpu, deployed.memory_gib)


def test_the_matrix_prices_the_l4_as_the_shipped_stack() -> None:
    """The matrix's L4 row costs what `make preview STACK=l4` prints per instance ($1.42/h in a Tier 1 region)."""
    shape = next(shape for shape in SHAPES if shape.accelerator is Accelerator("nvidia-l4"))
    row = fit(catalog_model("gemma-4-12b-it"), "qat-w4a16-ct", shape, Workload())
    assert row.usd_per_hour == pytest.approx(1.4209, abs=1e-3)
    assert "8 vCPU, 32 GiB" in row.price_basis
