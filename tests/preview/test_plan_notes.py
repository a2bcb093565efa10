"""The plan's notes: the manual steps and likely failures a stack implies, in text and JSON."""

from __future__ import annotations

import json

from preview.notes import manual_steps
from tests.conftest import render_stack
from tests.preview_cli import SHARES_SHIPPED_PLANS, shipped_plan


def test_gpu_stack_names_the_quota_of_the_right_kind_and_region() -> None:
    """A first `pulumi up` without GPU quota never starts a revision; the plan names which quota, where."""
    notes = manual_steps(render_stack("l4"))
    assert any(
        note.startswith("quota: Cloud Run needs 1 NVIDIA L4 GPU(s) without zonal redundancy in us-east4")
        for note in notes
    )
    redundant = manual_steps(
        render_stack(
            "l4",
            {
                "gemma-serving:cloudRun": json.dumps(
                    {"cpu": 8, "memoryGib": 32, "maxInstances": 2, "gpuZonalRedundancyDisabled": False}
                )
            },
        )
    )
    assert any("needs 2 NVIDIA L4 GPU(s) with zonal redundancy in us-east4" in note for note in redundant)


def test_no_invoker_means_verify_gets_403() -> None:
    """With no invoker granted, a CI service account calling verify gets 403: the plan says so up front."""
    notes = manual_steps(render_stack("rtx6000"))
    assert any(note.startswith("access: no invoker is granted") and "403" in note for note in notes)
    granted = manual_steps(
        render_stack(
            "l4",
            {"gemma-serving:cloudRun": json.dumps({"cpu": 8, "memoryGib": 32, "invokers": ["group:ml@example.com"]})},
        )
    )
    assert any(note.startswith("access: only group:ml@example.com may call the service") for note in granted)


def test_pinned_revisions_are_listed_to_check_against_the_hub() -> None:
    """Each pinned Hugging Face revision is named with the page to check it against."""
    notes = manual_steps(render_stack("rtx6000"))
    revisions = [note for note in notes if note.startswith("revision: ")]
    assert len(revisions) == 2  # the model and the MTP drafter
    assert all("https://huggingface.co/google/" in note for note in revisions)


def test_tpu_stack_names_the_default_network_and_preemptible_quota() -> None:
    """The TPU stack attaches to the `default` network, which some projects do not have, and needs
    preemptible quota for flex-start."""
    notes = manual_steps(render_stack("tpu-v6e"))
    assert any(note.startswith("network: ") and "'default'" in note for note in notes)
    assert any("preemptible TPU v6e quota in us-east5-a" in note for note in notes)
    assert any(note.startswith("access: the node has an internal IP only") for note in notes)


@SHARES_SHIPPED_PLANS
def test_notes_are_in_the_text_and_json_plans() -> None:
    """The notes appear in both forms of the plan, the unset gcp:project first."""
    text = shipped_plan("tpu-v6e")
    assert text.returncode == 0, text.stderr
    assert "  ! network: the node, its firewall rules" in text.stdout
    notes = json.loads(shipped_plan("l4", "json").stdout)["notes"]
    assert notes[0].startswith("gcp:project is not set")
    assert any(note.startswith("teardown: `pulumi destroy`") for note in notes)
    assert any(note.startswith("quota: ") for note in notes)


def test_force_destroy_changes_the_teardown_note() -> None:
    """With bucket.forceDestroy the plan warns that destroy deletes the weights, instead of saying it keeps them."""
    notes = manual_steps(render_stack("l4", {"gemma-serving:bucket": json.dumps({"forceDestroy": True})}))
    (teardown,) = [note for note in notes if note.startswith("teardown: ")]
    assert "deletes the model bucket with the weights" in teardown
