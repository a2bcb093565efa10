"""`gemma-verify advise` on GKE: node pools of GPUs or TPU chips, tensor parallel and replicas, priced per node."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main as preview_main
from preview.stack_file import read_stack_config
from serving.shapes import shapes
from stacks.loading import load_stack
from tests.conftest import ROOT, ensure_event_loop
from verify.advise.offers import advised_shapes, offers
from verify.advise.options import AdviseOptions, Slo
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise
from verify.advise.write import write_stack

GKE_QUESTION = AdviseOptions(
    prompt_tokens=8192,
    output_tokens=512,
    users=50,
    # 8K-token prompts cold on an L4 need seconds of prefill: a 4 s TTFT leaves G2 rows to rank beside A3 and ct6e.
    slo=Slo(p95_ttft_ms=4000),
    platforms=("gke",),
    provisioning=("on-demand", "spot"),
    top=100,
    one_ranking=True,
)


@pytest.fixture(scope="module")
def gke_answer() -> AdviseReport:
    return run_advise(GKE_QUESTION)


def test_every_gke_accelerator_count_of_the_shapes_table_is_offered() -> None:
    """The advisor once skipped GKE altogether: H100 nodes, 2- and 4-GPU L4 nodes and TPU node pools never
    appeared. Every (accelerator, GPUs a node) the shapes table has for GKE is a shape advise considers."""
    offered = {(shape.accelerator, shape.chips) for shape in advised_shapes() if shape.platform == "gke"}
    table = {(entry.accelerator, entry.accelerators) for entry in shapes(platform="gke")}
    assert offered == table
    names = [shape.name for shape in advised_shapes()]
    assert len(names) == len(set(names)), "a shape offered twice is ranked twice"
    assert {"ct6e-standard-1t", "ct6e-standard-4t", "ct6e-standard-8t", "a3-highgpu-1g", "g2-standard-48"} <= set(names)


def test_a_provisioning_model_the_machine_series_lacks_is_ruled_out_with_the_reason() -> None:
    """A3 High 1-4 GPU machines come only as Spot or flex-start: asked for on-demand, advise says so instead of
    pricing a node Google would not rent."""
    found, ruled_out = offers(platforms=("gke",), region=None, provisioning=("on-demand",))
    assert "a3-highgpu-1g" not in {offer.shape.name for offer in found}
    reasons = dict(ruled_out)
    assert "spot or flex-start only" in reasons["a3-highgpu-1g on-demand"]


def test_platform_gke_ranks_gke_rows_with_tensor_parallel_nodes_and_their_price(gke_answer: AdviseReport) -> None:
    """`--platform gke`: only GKE rows; a node's replicas are its GPUs over the tensor parallel size, and the
    $/h is the nodes' rate plus the cluster's fee and system node, with each rate's page and read day."""
    rows = gke_answer.rows
    assert rows
    assert {row.platform for row in rows} == {"gke"}
    assert {row.shape for row in rows} & {"ct6e-standard-1t", "ct6e-standard-4t"}
    assert any(row.tensor_parallel > 1 for row in rows)
    for row in rows:
        assert row.zone is not None
        assert row.billed_units >= -(-row.replicas * row.tensor_parallel // 8)
        assert "the cluster" in row.price_basis.source
        assert "read 2026-" in row.price_basis.source
    assert "node" in render(gke_answer)
    spot = [row for row in rows if row.provisioning == "spot"]
    assert spot, "spot node pools are priced where the price book has their rate"


def test_a_second_hand_or_unconfirmed_gke_rate_is_said_so_in_the_row(gke_answer: AdviseReport) -> None:
    """A machine-type rate read through a copy of Google's page (the G2 rates, through a public listing of the
    billing catalog) or not confirmed at all (the system node's) is labelled in the row's price basis."""
    g2 = next(row for row in gke_answer.rows if row.shape.startswith("g2-"))
    assert "second-hand: read through skypilot-org/skypilot-catalog" in g2.price_basis.source
    assert "UNCONFIRMED rate" in g2.price_basis.source, "the e2-standard-4 system node's rate is unconfirmed"
    spot = next(row for row in gke_answer.rows if row.shape.startswith("g2-") and row.provisioning == "spot")
    assert "Spot" in spot.price_basis.source or "spot" in spot.price_basis.source


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "__main__.py", "Pulumi.l4.yaml", "Pulumi.tpu-v6e.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("accelerator", ["tpu-v6e", "nvidia-l4"])
def test_write_a_gke_row_produces_a_fleet_stack_that_previews_at_the_rows_price(
    accelerator: str, project: Path
) -> None:
    """`--write NAME` for a GKE row: a fleet stack (machine type, zone, provisioning, nodes, replicas, tensor
    parallel) that the real preview plans with exit 0, billing what the row said."""
    question = GKE_QUESTION.model_copy(
        update={"models": ("gemma-4-12b-it",), "slo": Slo(p95_ttft_ms=60000), "provisioning": ("on-demand",)}
    )
    row = next(row for row in run_advise(question).rows if row.accelerator == accelerator)
    name = f"advised-gke-{accelerator}"
    path = write_stack(project, name, row)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]
    pool = config["gemma-serving:gke"]["nodePool"]
    assert pool["machineType"] == row.shape
    # The floor the row was priced at; the autoscaler may grow to the peak's replicas.
    assert pool["minNodes"] == row.billed_units
    assert row.peak_replicas is not None
    assert pool["maxNodes"] == -(-row.peak_replicas // row.replicas_per_unit)
    assert config["gemma-serving:gke"]["replicas"] == {"min": row.replicas, "max": row.peak_replicas}
    assert config["gemma-serving:vllm"]["tensorParallelSize"] == row.tensor_parallel
    ensure_event_loop()
    assert preview_main(["--stack", name, "--root", str(project), "--format", "json"]) == 0
    billing = load_stack(read_stack_config(project, name).values, root=project).settings.billing()
    unit, fixed = billing.hourly_price().usd_per_hour, billing.fixed_price()
    assert unit is not None
    assert fixed is not None
    assert fixed.usd_per_hour is not None
    assert unit * billing.kept_running_units + fixed.usd_per_hour == pytest.approx(row.usd_per_hour)
