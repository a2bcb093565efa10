"""The GKE nodes' account described itself as the one that "runs gemma-serving's vLLM containers; reads the model
bucket only": an auditor reviewing who may read the weights was pointed at the wrong account."""

from __future__ import annotations

import pytest

from components.gke.node_identity import NODE_ACCOUNT_DESCRIPTION
from components.serving_identity import SERVING_DESCRIPTION
from tests.conftest import render_stack


@pytest.mark.parametrize("stack", ["gke-l4x4", "gke-tpu-v6e"])
def test_the_node_account_says_what_it_is(stack: str) -> None:
    capture = render_stack(stack)
    accounts = {
        resource.name: resource.inputs.get("description")
        for resource in capture.resources
        if resource.type == "gcp:serviceaccount/account:Account"
    }
    nodes = [name for name, description in accounts.items() if description == NODE_ACCOUNT_DESCRIPTION]
    assert len(nodes) == 1, accounts
    assert nodes[0].endswith("-nodes-account-sa")
    serving = [name for name, description in accounts.items() if description == SERVING_DESCRIPTION]
    assert serving == [name for name in accounts if name.endswith("-identity-sa")]  # the pods' own account
