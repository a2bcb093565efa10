"""The queued-resource request body: v2alpha1 field names for each tier, and the fingerprint label."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.tpu.request_body import (
    SPEC_LABEL,
    Guaranteed,
    Spot,
    build_request_body,
    fingerprint,
    fingerprint_label,
    with_fingerprint_label,
)
from tests.components.tpu_request import SPEC


def node_of(body: dict[str, object]) -> dict[str, object]:
    return body["tpu"]["nodeSpec"][0]["node"]  # type: ignore[index,no-any-return]


def test_flex_start_carries_provisioning_model_and_max_run_duration() -> None:
    """Flex-start without a run limit would bill until deleted; the body must bound it."""
    body = build_request_body(SPEC)
    assert body["provisioningModel"] == "FLEX_START"
    assert body["runDuration"] == {"maxRunDuration": "14400s"}
    assert "spot" not in body
    assert "guaranteed" not in body


def test_spot_and_guaranteed_tiers() -> None:
    """Each tier uses its own v2alpha1 field; a reservation is named in full."""
    spot = build_request_body(replace(SPEC, provisioning=Spot()))
    assert spot["spot"] == {}
    assert "provisioningModel" not in spot
    assert "runDuration" not in spot
    reserved = build_request_body(replace(SPEC, provisioning=Guaranteed("my-res")))
    assert reserved["guaranteed"] == {"reserved": True}
    assert reserved["reservationName"] == "projects/p/locations/us-east5-a/reservations/my-res"
    on_demand = build_request_body(replace(SPEC, provisioning=Guaranteed()))
    assert on_demand["guaranteed"] == {}
    assert "reservationName" not in on_demand


def test_node_defaults_are_internal_and_identified() -> None:
    """Internal IP only, our service account, the startup script in metadata, the firewall tag."""
    body = build_request_body(SPEC)
    spec = body["tpu"]["nodeSpec"][0]
    assert spec["parent"] == "projects/p/locations/us-east5-a"
    assert spec["nodeId"] == "gemma-tpu"
    node = node_of(body)
    assert node["acceleratorType"] == "v6e-1"
    assert node["runtimeVersion"] == "v2-alpha-tpuv6e"
    assert node["networkConfig"] == {"network": "default", "enableExternalIps": False}
    assert node["serviceAccount"]["email"] == "sa@p.iam.gserviceaccount.com"  # type: ignore[index]
    assert node["metadata"] == {"startup-script": "#!/bin/bash\n"}
    assert node["tags"] == ["gemma-tpu-vllm"]
    assert node["labels"]["stack"] == "tpu-v6e"  # type: ignore[index]
    assert "queueingPolicy" not in body
    limited = build_request_body(replace(SPEC, valid_until_seconds=6 * 3600, subnetwork="tpu-subnet"))
    assert limited["queueingPolicy"] == {"validUntilDuration": "21600s"}
    assert node_of(limited)["networkConfig"]["subnetwork"] == "tpu-subnet"  # type: ignore[index]


def test_fingerprint_label_identifies_the_spec() -> None:
    """The label lets a 409 tell our request from someone else's: same spec, same label; any change, another."""
    body = build_request_body(SPEC)
    assert SPEC_LABEL not in node_of(body)["labels"]  # type: ignore[operator]
    labelled = with_fingerprint_label(body)
    label = node_of(labelled)["labels"][SPEC_LABEL]  # type: ignore[index]
    assert label == fingerprint(body) == fingerprint(labelled) == fingerprint_label(labelled)
    assert {k: v for k, v in node_of(labelled)["labels"].items() if k != SPEC_LABEL} == node_of(body)["labels"]  # type: ignore[attr-defined]
    assert len(label) <= 63
    assert label.isalnum()
    assert build_request_body(SPEC) == body
    assert fingerprint(build_request_body(replace(SPEC, startup_script="#!/bin/bash\nexit 0\n"))) != label
    assert fingerprint_label({"tpu": {}}) is None


@pytest.mark.parametrize("bad_id", ["Gemma", "1tpu", "tpu_node", "", "x" * 64])
def test_ids_google_would_refuse_fail_early(bad_id: str) -> None:
    """An id Google rejects fails at construction (in the preview), not after queueing."""
    with pytest.raises(ValueError, match="lowercase letters"):
        replace(SPEC, queued_resource_id=bad_id)
