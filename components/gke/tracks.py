"""The manifests of a gated GKE fleet: two Deployment tracks, the user Service on the serving one, a
candidate Service on the other.

Why derived from the direct manifests (components/gke/manifests.py) rather than written again: a track is
the same Deployment under another name with one more label (`track`), so whatever the direct fleet promises
(FUSE options, probes, the key from Secret Manager) holds on both tracks by construction. The candidate runs
one replica (0 when parked) and is reached only through its own internal Service; the HPA, the user Service
and an InferencePool follow the serving track. Each manifest function builds a fresh dict, so changing
what it returned changes nothing shared (and the Pulumi inputs inside are never copied).
"""

from __future__ import annotations

from typing import Any

from components.gke import manifests
from components.gke.manifests import INTERNAL_LB_ANNOTATION, FleetSpec

TRACK_LABEL = "track"
CANDIDATE_SUFFIX = "-candidate"


def track_name(spec: FleetSpec, track: str) -> str:
    return f"{spec.name}-{track}"


def candidate_service_name(spec: FleetSpec) -> str:
    return f"{spec.name}{CANDIDATE_SUFFIX}"


def _on_track(selector: dict[str, str], track: str) -> dict[str, str]:
    return {**selector, TRACK_LABEL: track}


def track_deployment(spec: FleetSpec, track: str, *, candidate: bool) -> dict[str, Any]:
    """The direct Deployment renamed to `<name>-<track>`, its pods labelled with the track; the candidate
    holds one replica (none when the fleet is parked), the serving track's count is the HPA's."""
    manifest = manifests.deployment(spec)
    manifest["metadata"]["name"] = track_name(spec, track)
    manifest["metadata"]["labels"] = _on_track(manifest["metadata"]["labels"], track)
    body = manifest["spec"]
    body["selector"]["matchLabels"] = _on_track(body["selector"]["matchLabels"], track)
    body["template"]["metadata"]["labels"] = _on_track(body["template"]["metadata"]["labels"], track)
    if candidate:
        body["replicas"] = 0 if spec.parked else 1
    return manifest


def user_service(spec: FleetSpec, serving: str) -> dict[str, Any]:
    """The Service users reach (internal, or open to the allowed ranges), on the serving track only."""
    manifest = manifests.service(spec)
    manifest["spec"]["selector"] = _on_track(manifest["spec"]["selector"], serving)
    return manifest


def candidate_service(spec: FleetSpec, candidate: str) -> dict[str, Any]:
    """The candidate's own endpoint for the gate's health check and bench: always an internal load balancer,
    whatever the user Service is, so an unproven template is never reachable from outside the VPC."""
    manifest = manifests.service(spec)
    manifest["metadata"]["name"] = candidate_service_name(spec)
    manifest["metadata"]["annotations"] = {INTERNAL_LB_ANNOTATION: "Internal"}
    manifest["metadata"]["labels"] = _on_track(manifest["metadata"]["labels"], candidate)
    manifest["spec"]["selector"] = _on_track(manifest["spec"]["selector"], candidate)
    manifest["spec"].pop("loadBalancerSourceRanges", None)
    return manifest


def serving_autoscaler(spec: FleetSpec, serving: str) -> dict[str, Any]:
    """The HPA scales the serving track (the candidate stays at one replica)."""
    manifest = manifests.autoscaler(spec)
    manifest["spec"]["scaleTargetRef"]["name"] = track_name(spec, serving)
    return manifest


def serving_inference_pool(spec: FleetSpec, serving: str, *, endpoint_picker: str) -> dict[str, Any]:
    """The InferencePool sends users to the serving track's pods only."""
    manifest = manifests.inference_pool(spec, endpoint_picker=endpoint_picker)
    labels = manifest["spec"]["selector"]["matchLabels"]
    manifest["spec"]["selector"]["matchLabels"] = _on_track(labels, serving)
    return manifest
