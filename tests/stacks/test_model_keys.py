"""Every mistake in a stack's model block is reported under the key the user wrote, with what to write.

Guards against issue 35's findings: a `varaint:` typo reported as "model.variant: None is not a variant";
a bad `model.revision` reported as `model.source.huggingFace.revision` (a key no stack file has); a missing
`model.id` reported as "model.path required"; a leftover `model.path` beside `model.id` accepted; an
all-zero placeholder commit and a stack copied from another model keeping its commit pins, both previewing
cleanly and failing only in the import job at `pulumi up`.
"""

from __future__ import annotations

import json

import pytest

from stacks.loading import settings_from_config
from stacks.revisions import is_placeholder, revision_problem
from tests.stacks.test_settings import config_with, problems_of

P = "gemma-serving:"
# rtx6000 pins google/gemma-4-12B-it-qat-w4a16-ct and its drafter at these (the catalog records both).
TWELVE_B = "1d2c2d7f2466070e69d6fb3fd5ce9a7d75f2f6ee"
TWELVE_B_DRAFTER = "46d4c6f13f0ac0ad827b915669b8df9b81c64c51"
UNPINNED = "9f3c2a71b4e85d06c1a7f29e3b58d4c60e17a2b9"
CATALOG_STACKS = ("l4", "rtx6000", "tpu-v6e", "gemma4-e4b-l4", "gemma4-26b-rtx6000", "gemma4-31b-v6e8", "l4-stream")


def test_a_typo_in_the_model_block_is_named_with_a_suggestion() -> None:
    """`varaint: bf16` is one mistake, the typo, not a missing variant."""
    model = {"id": "gemma-4-12b-it", "varaint": "qat-w4a16-ct", "revision": TWELVE_B}
    message = problems_of(config_with("l4", model=model))
    assert message.startswith(f"{P}model.varaint: unknown key (a typo?); did you mean model.variant?")
    assert "None is not a variant" not in message


def test_a_typo_in_another_nested_block_is_named_with_a_suggestion() -> None:
    """The same for any nested block (the settings' own error formatting): cloudRun.mount.uidd."""
    message = problems_of(config_with("l4", cloudRun__mount__uidd=1001))
    assert "cloudRun.mount.uidd: unknown key (a typo?); did you mean uid?" in message


@pytest.mark.parametrize(
    ("revision", "expected"),
    [
        pytest.param("0" * 40, "model.revision: '" + "0" * 40 + "' is a placeholder, not a commit of", id="zeros"),
        pytest.param("deadbeef" * 5, "model.revision: '" + "deadbeef" * 5 + "' is a placeholder", id="repeated"),
        pytest.param("main", "model.revision: 'main' is not a commit id", id="branch"),
        pytest.param("1d2c2d7", "model.revision: '1d2c2d7' is a short commit id", id="short"),
    ],
)
def test_a_bad_revision_is_reported_under_model_revision(revision: str, expected: str) -> None:
    """Under the key the stack file wrote, never model.source.huggingFace.revision."""
    model = {"id": "gemma-4-12b-it", "variant": "qat-w4a16-ct", "revision": revision}
    message = problems_of(config_with("l4", model=model))
    assert message.startswith(f"{P}{expected}")
    assert "source.huggingFace" not in message


def test_a_copied_stack_keeping_another_models_pin_names_both_repos() -> None:
    """rtx6000 turned into a 31B keeps the 12B's commit: refused, naming the 12B repo and the 31B one."""
    model = {"id": "gemma-4-31b-it", "variant": "nvfp4", "revision": TWELVE_B, "drafterRevision": TWELVE_B_DRAFTER}
    message = problems_of(config_with("rtx6000", model=model))
    assert message.startswith(
        f"{P}model.revision: {TWELVE_B} is a commit of google/gemma-4-12B-it-qat-w4a16-ct (the catalog's pin: "
    )
    assert "not of nvidia/gemma-4-31B-it-NVFP4" in message


def test_a_copied_stack_keeping_the_drafters_pin_names_both_repos() -> None:
    """The drafter's pin too: the 12B assistant's commit on the 31B assistant."""
    model = {"id": "gemma-4-31b-it", "variant": "nvfp4", "revision": UNPINNED, "drafterRevision": TWELVE_B_DRAFTER}
    message = problems_of(config_with("rtx6000", model=model))
    assert f"model.drafterRevision: {TWELVE_B_DRAFTER} is a commit of google/gemma-4-12B-it-assistant" in message
    assert "not of google/gemma-4-31B-it-assistant" in message


def test_the_long_form_refuses_placeholders_and_foreign_pins_too() -> None:
    """model.source.huggingFace.revision is what a long-form stack writes; it gets the same checks there."""
    source = {"huggingFace": {"repo": "google/gemma-4-31B-it", "revision": TWELVE_B}}
    message = problems_of(config_with("gke-tpu-v6e", model__source=source))
    assert "model.source.huggingFace: revision: 1d2c2d7f2466070e69d6fb3fd5ce9a7d75f2f6ee is a commit of" in message


def test_a_missing_model_id_is_named_as_such() -> None:
    """variant and revision without id: "model.id required", not "model.path required"."""
    message = problems_of(config_with("l4", model={"variant": "qat-w4a16-ct", "revision": TWELVE_B}))
    assert message.startswith(f"{P}model.id: required with model.variant")
    assert "model.path" not in message.split(";")[0]


@pytest.mark.parametrize("stack", CATALOG_STACKS)
def test_a_leftover_model_path_beside_model_id_is_refused(stack: str) -> None:
    """The catalog decides the bucket path; a leftover long-form path would contradict it on every stack."""
    values = config_with(stack)
    settings_from_config(values)  # the stack as shipped loads
    model = {**json.loads(values[f"{P}model"]), "path": "gemma-4-12B-it"}
    message = problems_of(config_with(stack, model=model))
    assert f"{P}model.path: a catalog model" in message
    assert "remove model.path" in message


def test_placeholders_are_told_from_commits() -> None:
    """Real pins pass; the shapes nobody copies from a commit history do not."""
    assert not is_placeholder(TWELVE_B)
    assert all(
        is_placeholder(v) for v in ("0" * 40, "f" * 40, "ab" * 20, "deadbeef" * 5, "0123456789abcdef" * 2 + "01234567")
    )
    assert revision_problem("k", "google/gemma-4-12B-it-qat-w4a16-ct", TWELVE_B) is None


def test_a_typo_in_the_speculative_block_is_named_not_a_missing_drafter_revision() -> None:
    """`speculative: {methd: mtp}` used to ask for model.drafterRevision, a key the user had no reason to write."""
    message = problems_of(config_with("l4", vllm__speculative={"methd": "mtp"}))
    assert message.startswith(
        f"{P}vllm.speculative.methd: unknown key (a typo?); did you mean vllm.speculative.method?"
    )


def test_a_typo_inside_a_list_block_lists_what_is_allowed() -> None:
    """tpu.placements[0].zoen: the suggestion reads the list's item type (it used to list nothing)."""
    placements = [{"zone": "us-east5-a", "provisioning": {"model": "spot"}, "zoen": "x"}]
    message = problems_of(config_with("tpu-v6e", tpu__placements=placements))
    assert (
        "tpu.placements.0.zoen: unknown key (a typo?); did you mean zone? allowed here: provisioning, zone" in message
    )
