"""A GKE fleet gets its weights the way every other platform does: one import job per checkpoint, run by
`pulumi up` before any vLLM pod is created.

Guards against: a fleet that rolls out onto an empty bucket path (pods crash-loop, the node pool bills),
a drafter left out of the bucket, and a stack that imports nothing without the plan saying so.
"""

from __future__ import annotations

import json

import pytest

from preview.capture import Capture
from preview.notes import manual_steps
from preview.supply_plan import RUN
from serving.naming import TypeToken
from stacks.catalog_checks import Served, served_checkpoint
from stacks.loading import settings_from_config
from tests.conftest import ROOT, render_stack, stack_config

DRAFTER_REVISION = "46d4c6f13f0ac0ad827b915669b8df9b81c64c51"


def _fleet_waits_for_every_import(rendered: Capture) -> list[str]:
    (fleet,) = rendered.of_type(TypeToken.GKE_FLEET)
    runs = rendered.of_type(RUN)
    assert runs, "no import run registered"
    assert {run.urn for run in runs} <= set(fleet.dependencies)
    return [run.name for run in runs]


def test_the_l4_fleet_imports_the_31b_before_it_rolls_out() -> None:
    """`make preview STACK=gke-l4x4` showed `importJobs: {}`: 62 GB had to reach the bucket by hand."""
    rendered = render_stack("gke-l4x4")
    assert _fleet_waits_for_every_import(rendered) == ["gemma-gke-l4x4-import-target-run"]
    assert not any(note.startswith("weights: ") for note in manual_steps(rendered))


def test_the_tpu_fleet_imports_before_it_rolls_out() -> None:
    """The TPU fleet's pods mount the bucket; they must not start before the import completed."""
    assert _fleet_waits_for_every_import(render_stack("gke-tpu-v6e")) == ["gemma-gke-tpu-v6e-import-target-run"]


def test_a_fleet_with_an_mtp_drafter_imports_it_too() -> None:
    """With speculative decoding the pods read the drafter's directory as well: both imports run first."""
    model = {
        "id": "gemma-4-12b-it",
        "variant": "bf16",
        "revision": "707f0a3b8a3c7ad586ed01e27eafbad8a27dd0f7",
        "drafterRevision": DRAFTER_REVISION,
    }
    vllm = json.loads(stack_config("gke-l4x4").values["gemma-serving:vllm"])
    vllm.pop("dtype", None)
    vllm["speculative"] = {"method": "mtp", "numSpeculativeTokens": 3}
    rendered = render_stack(
        "gke-l4x4", {"gemma-serving:model": json.dumps(model), "gemma-serving:vllm": json.dumps(vllm)}
    )
    assert sorted(_fleet_waits_for_every_import(rendered)) == [
        "gemma-gke-l4x4-import-drafter-run",
        "gemma-gke-l4x4-import-target-run",
    ]


def test_a_fleet_without_a_source_says_the_bucket_must_be_filled() -> None:
    """No source, no import: the plan must say the weights have to be in the bucket before vLLM starts."""
    model = {"path": "gemma-4-31B-it", "servedName": "gemma-4-31b-it"}
    rendered = render_stack("gke-l4x4", {"gemma-serving:model": json.dumps(model)})
    assert not rendered.of_type(RUN)
    assert any(note.startswith("weights: no weight source is set") for note in manual_steps(rendered))


EVERY_STACK = sorted(
    path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    for path in [*ROOT.glob("Pulumi.*.yaml"), *ROOT.glob("examples/Pulumi.*.yaml")]
    if path.name != "Pulumi.yaml"
)


@pytest.mark.parametrize("stack", EVERY_STACK)
def test_every_stack_that_names_a_catalog_checkpoint_imports_it(stack: str) -> None:
    """`gke-h100` named the catalog's 31B and imported nothing: the fleet rolled out onto an empty bucket path
    (issue 46). A stack serving a catalog checkpoint imports it, unless the catalog knows no commit of that
    repo to pin (then the stack file says the bucket is filled by hand, and the plan's note says so too)."""
    settings = settings_from_config(stack_config(stack).values)
    served = served_checkpoint(settings.model)
    if not isinstance(served, Served):
        return
    if "target" in settings.weight_sources():
        return
    assert served.variant.pins == (), f"{stack}: the catalog pins {served.variant.repo}; import it (model.source)"
    text = (ROOT / "examples" / f"Pulumi.{stack}.yaml").read_text()
    assert "No commit of" in text, stack
    assert "copy the checkpoint" in text, stack
    assert any(note.startswith("weights: no weight source is set") for note in manual_steps(render_stack(stack)))
