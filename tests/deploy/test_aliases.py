"""Resources that moved keep their aliases, so a deployed stack's next `pulumi up` moves them in state.

Without the alias the engine sees a new resource and an orphan: it deletes the old one and creates the new
one. For the TPU stack's API key that means a new secret (the node's key stops matching), for the bucket's
reader binding a window in which the node cannot read its weights. The offline capture records each
registration's aliases, so dropping one fails here, not on a user's stack.
"""

from __future__ import annotations

import pytest

from preview.capture import Capture
from serving.naming import StackNames, TypeToken
from tests.conftest import render_stack

STACK = "tpu-v6e"


def _aliases(capture: Capture, name: str) -> tuple[str, ...]:
    return next(resource.aliases for resource in capture.resources if resource.name == name)


def test_the_bucket_reader_moved_from_the_node_keeps_its_former_name() -> None:
    """The node granted its own weights reader until the bucket took over (`<node>-weights-reader`)."""
    capture = render_stack(STACK)
    names = StackNames(STACK)
    former_node = f"urn:pulumi:{STACK}::gemma-serving::{TypeToken.TPU_VLLM_NODE}::{names.serving}"
    assert _aliases(capture, f"{names.model_bucket}-reader-serving") == (
        f"name={names.serving}-weights-reader parentUrn={former_node}",
    )


def test_the_api_key_secret_keeps_its_name_from_before_the_managed_secret_component() -> None:
    """The key's secret and version were the node's children, named `<node>-api-key`, before ManagedSecret."""
    capture = render_stack(STACK)
    names = StackNames(STACK)
    node = next(resource for resource in capture.resources if resource.type == TypeToken.TPU_VLLM_NODE)
    for child in ("secret", "version"):
        assert _aliases(capture, f"{names.serving}-api-key-{child}") == (
            f"name={names.serving}-api-key parentUrn={node.urn}",
        )


@pytest.mark.parametrize(
    ("stack", "roles"), [("l4", ("target",)), ("rtx6000", ("target", "drafter")), (STACK, ("target",))]
)
def test_each_import_account_keeps_its_place_from_before_serving_identity(stack: str, roles: tuple[str, ...]) -> None:
    """An import job's account was the ModelImport's own child (`<job>-sa`) before it became a ServingIdentity:
    without the alias, `pulumi up` would delete the account the job runs as and create it again."""
    capture = render_stack(stack)
    names = StackNames(stack)
    for role in roles:
        job = names.import_job(role)
        former = f"urn:pulumi:{stack}::gemma-serving::pulumi:pulumi:Stack${TypeToken.MODEL_IMPORT}::{job}"
        assert _aliases(capture, f"{job}-sa")[0] == f"name={job}-sa parentUrn={former}"


def test_resources_that_never_moved_have_no_alias_of_ours() -> None:
    """Only the moves above carry aliases (pulumi-gcp adds type aliases of its own, which are kept apart)."""
    capture = render_stack(STACK)
    ours = {resource.name for resource in capture.resources if any("name=" in alias for alias in resource.aliases)}
    names = StackNames(STACK)
    assert ours == {
        f"{names.import_job('target')}-sa",
        f"{names.model_bucket}-reader-serving",
        f"{names.serving}-api-key-secret",
        f"{names.serving}-api-key-version",
    }
