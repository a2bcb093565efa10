"""A gated GKE fleet renders two tracks, and users reach only the serving one.

What a user loses if this breaks: a template change that goes straight to the pods users reach (the gate
checks nothing), a candidate Service open to the internet, or an HPA scaling the wrong track. The plan is
rendered under the mocks and every object validated against the pinned schema, like the direct plans.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import render_stack, stack_config
from tests.kubernetes.manifests import kubernetes_manifests, validate

STACK = "gke-l4x4"
NAME = "gemma-gke-l4x4-vllm"


def _gated(serving: str, **service: Any) -> str:
    block = json.loads(stack_config(STACK).values["gemma-serving:gke"])
    block["rollout"] = {"gated": True, "servingTrack": serving}
    block["service"] = {**block.get("service", {}), **service}
    return json.dumps(block)


def _by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The fleet's own objects of a kind (the gateway's pickers and the metrics adapter have tests of their own)."""
    return {
        m["metadata"]["name"]: m
        for m in manifests
        if m["kind"] == kind and m["metadata"]["name"].startswith(NAME) and not m["metadata"]["name"].endswith("-epp")
    }


@pytest.fixture(scope="module")
def green_serving() -> list[dict[str, Any]]:
    return kubernetes_manifests(render_stack(STACK, {"gemma-serving:gke": _gated("green", inferencePool=True)}))


def test_two_tracks_and_two_services_validate(green_serving: list[dict[str, Any]]) -> None:
    """Every object of the gated plan must be accepted by the API server the stack pins."""
    for manifest in green_serving:
        validate(manifest, "1.34")
    assert set(_by_kind(green_serving, "Deployment")) == {f"{NAME}-blue", f"{NAME}-green"}
    assert set(_by_kind(green_serving, "Service")) == {NAME, f"{NAME}-candidate"}


def test_users_reach_the_serving_track_and_the_gate_the_candidate(green_serving: list[dict[str, Any]]) -> None:
    """The user Service and the HPA follow the serving track, the candidate Service the other; behind the
    gateway each track has its own InferencePool (the route's weights choose between them)."""
    services = _by_kind(green_serving, "Service")
    assert services[NAME]["spec"]["selector"] == {"app": NAME, "track": "green"}
    assert services[f"{NAME}-candidate"]["spec"]["selector"] == {"app": NAME, "track": "blue"}
    hpa = _by_kind(green_serving, "HorizontalPodAutoscaler")[NAME]
    assert hpa["spec"]["scaleTargetRef"]["name"] == f"{NAME}-green"
    pools = _by_kind(green_serving, "InferencePool")
    assert pools[f"{NAME}-green"]["spec"]["selector"]["matchLabels"] == {"app": NAME, "track": "green"}
    assert pools[f"{NAME}-blue"]["spec"]["selector"]["matchLabels"] == {"app": NAME, "track": "blue"}


def test_each_track_selects_its_own_pods_and_the_candidate_runs_one(green_serving: list[dict[str, Any]]) -> None:
    """Two Deployments selecting the same pods would fight over them; the candidate costs one node, not the HPA's."""
    deployments = _by_kind(green_serving, "Deployment")
    for track, deployment in ((t, deployments[f"{NAME}-{t}"]) for t in ("blue", "green")):
        assert deployment["spec"]["selector"]["matchLabels"] == {"app": NAME, "track": track}
        assert deployment["spec"]["template"]["metadata"]["labels"]["track"] == track
    assert deployments[f"{NAME}-blue"]["spec"]["replicas"] == 1
    assert "replicas" not in deployments[f"{NAME}-green"]["spec"]


def test_the_serving_track_keeps_its_template_until_promoted() -> None:
    """A template change must reach the candidate only: the serving track ignores changes to its template."""
    capture = render_stack(STACK, {"gemma-serving:gke": _gated("blue")})
    tracks = {f"{NAME}-blue", f"{NAME}-green"}
    options = {r.name: r for r in capture.resources if r.type == "kubernetes:apps/v1:Deployment" and r.name in tracks}
    assert set(options) == tracks
    assert options[f"{NAME}-blue"].ignore_changes == ("spec.template",)
    assert not options[f"{NAME}-green"].ignore_changes


def test_the_candidate_service_stays_internal_when_users_reach_a_public_one() -> None:
    """An unproven template must never be reachable from outside the VPC, whatever the user Service is."""
    gated = _gated("blue", publicEndpoint=True, allowedSourceRanges=["203.0.113.0/24"])
    services = _by_kind(kubernetes_manifests(render_stack(STACK, {"gemma-serving:gke": gated})), "Service")
    assert services[NAME]["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    candidate = services[f"{NAME}-candidate"]
    assert candidate["metadata"]["annotations"] == {"networking.gke.io/load-balancer-type": "Internal"}
    assert "loadBalancerSourceRanges" not in candidate["spec"]


def test_a_gated_fleet_exports_what_promotion_reads() -> None:
    """`verify promote` finds the tracks and the candidate's way in from the stack's own outputs."""
    outputs = render_stack(STACK, {"gemma-serving:gke": _gated("green")}).outputs
    assert (outputs["servingTrack"], outputs["candidateTrack"]) == ("green", "blue")
    assert outputs["deployment"] == f"{NAME}-green"
    assert f"service/{NAME}-candidate 8000:8000" in outputs["candidatePortForward"]
