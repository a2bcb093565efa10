"""The stack-output contract (serving/outputs.py) end to end: what the program exports is what verify reads.

Each shipped stack is rendered offline (the real program under Pulumi's mocks), its exports are turned
into what `pulumi stack output --json` would print, and verify's reader parses them into a Target.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from preview.render import clean
from serving.outputs import PLATFORM_OUTPUTS, DeployedOutputs, markdown_table, output_names, parse_stack_outputs
from stacks.settings import CloudRunStack, TpuStack
from tests.conftest import ROOT, render_stack, stack_config
from verify.endpoint import AuthKind, target_from_outputs

STACKS = ["l4", "rtx6000", "tpu-v6e"]


# Values only Google Cloud knows (shown as <computed> offline), replaced as `pulumi up` would fill them.
COMPUTED = "<computed>"
KNOWN_AFTER_UP = {"endpoint": "https://gemma-stack-abc123-uc.a.run.app"}


def stack_output_json(stack: str) -> dict[str, Any]:
    """The rendered exports as `pulumi stack output --json` shows them after `pulumi up`."""
    outputs = dict(clean(render_stack(stack).outputs))
    return {
        key: KNOWN_AFTER_UP.get(key, f"{key}-from-google") if value == COMPUTED else value
        for key, value in outputs.items()
    }


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_outputs_round_trip_through_verify(stack: str) -> None:
    """A renamed, dropped or retyped output must fail here, not in `verify health` after a rollout: every
    stack exports exactly its platform's outputs and verify reads them into a target."""
    raw = stack_output_json(stack)
    outputs = parse_stack_outputs(raw)
    model = type(outputs)
    required = {str(field.alias) for field in model.model_fields.values() if field.is_required()}
    assert required <= set(raw) <= set(output_names(model))
    target = target_from_outputs(stack, DeployedOutputs.read(raw))
    assert target.model == raw["servedModelName"]
    assert target.platform == raw["platform"]
    assert target.max_num_seqs == raw["maxNumSeqs"]
    expected_auth = {"google-id-token": AuthKind.GOOGLE, "api-key": AuthKind.API_KEY}[raw["authKind"]]
    assert target.auth_kind is expected_auth


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_exports_its_platforms_model(stack: str) -> None:
    """The settings variant and the outputs variant agree: a Cloud Run stack exports CloudRunOutputs."""
    from stacks.loading import settings_from_config

    settings = settings_from_config(stack_config(stack).values)
    outputs = parse_stack_outputs(stack_output_json(stack))
    assert outputs.platform == settings.PLATFORM
    assert isinstance(settings, CloudRunStack | TpuStack)


def test_docs_table_is_the_models_table() -> None:
    """docs/architecture.md must list exactly the outputs the models declare (regenerate it with
    `python -m serving.outputs`), so readers of the docs and of the code see one contract."""
    docs = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert markdown_table() in docs
    documented = set(re.findall(r"^\| `(\w+)` \|", markdown_table(), flags=re.MULTILINE))
    assert documented == {name for model in PLATFORM_OUTPUTS for name in output_names(model)}


def test_verifys_readers_read_only_outputs_the_contract_declares() -> None:
    """verify reads leniently (older stacks, hand-made fixtures), but every output it reads must be one the
    contract declares, with the same name: a reader expecting a renamed output would silently get None."""
    from verify.promote.outputs import RolloutOutputs

    declared = {name for model in PLATFORM_OUTPUTS for name in output_names(model)}
    for reader in (DeployedOutputs, RolloutOutputs):
        read = {field.alias or name for name, field in reader.model_fields.items()}
        assert read <= declared, f"{reader.__name__} reads outputs no stack exports: {sorted(read - declared)}"


@pytest.mark.parametrize("stack", STACKS)
def test_the_tolerant_reading_reads_a_whole_stack_as_the_contract_does(stack: str) -> None:
    """Guards against the tolerant reading (what every reader takes) typing an output differently from the
    platform model: a shipped stack's outputs read the same through both, and none is unreadable."""
    raw = stack_output_json(stack)
    contract = parse_stack_outputs(raw)
    reading = DeployedOutputs.read(raw)
    assert reading.unreadable == {}
    for name in DeployedOutputs.model_fields:
        if name in type(contract).model_fields and name != "billing":
            assert getattr(reading, name) == getattr(contract, name), name
    assert reading.billing == raw["billing"]


def test_an_older_stack_reads_with_what_it_lacks_as_none_and_names_what_is_malformed() -> None:
    """Guards against a stack deployed by an older version failing every reader, and against a malformed
    output turning into a silent None: the reading keeps the rest and names the fault."""
    reading = DeployedOutputs.read(
        {"endpoint": "https://x.run.app", "servedModelName": "m", "authKind": "google-id-token", "maxNumSeqs": "x"}
    )
    assert (reading.endpoint, reading.max_num_seqs, reading.billing, reading.candidate_percent) == (
        "https://x.run.app",
        None,
        None,
        0,
    )
    assert (
        reading.problem("maxNumSeqs")
        == "maxNumSeqs: Input should be a valid integer, unable to parse string as an integer"
    )
    assert reading.problem("rollout") == "rollout: Field required"
    assert reading.problem("endpoint") is None
