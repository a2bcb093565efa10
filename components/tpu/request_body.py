"""The queued-resource request body, built from plain data in one place.

Why separate: the offline preview shows exactly this body, the provider POSTs exactly this body, and the
diff compares exactly this body, so what a reviewer approves is what Google receives.

Field names follow the v2alpha1 REST reference (discovery document `tpu:v2alpha1`, revision 20250616,
https://cloud.google.com/tpu/docs/reference/rest/v2alpha1/projects.locations.queuedResources):
- `QueuedResource.provisioningModel`: enum with `FLEX_START` ("Provisioning with DWS Flex Start with max
  run duration"), and `QueuedResource.runDuration.maxRunDuration` (a google-duration, "14400s"); these
  exist in v2alpha1 only, which is why the client talks v2alpha1.
- tiers (a oneof): `spot: {}`, `guaranteed: {reserved: bool}`, plus `reservationName`
  (`projects/{project}/locations/{zone}/reservations/{reservation}`).
- `queueingPolicy.validUntilDuration`: Google fails the request if no node was available by then.
- `tpu.nodeSpec[]: {parent, nodeId, node}`, `Node.{acceleratorType, runtimeVersion, networkConfig:
  {network, subnetwork, enableExternalIps}, serviceAccount: {email, scope[]}, metadata (startup-script),
  labels, tags}`; `tags` are what firewall rules target.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from remote.google_auth import CLOUD_PLATFORM_SCOPE
from serving.gcp_names import RFC1035_ID

# A node label carrying a fingerprint of the request, so that after a "409 already exists" the provider
# can tell its own earlier request (adopt it) from someone else's (refuse, with a clear message). The
# provider adds it when it POSTs (`with_fingerprint_label`): the plan can show the body before values
# such as the bucket name are known, and the fingerprint is taken of the final, resolved body.
SPEC_LABEL = "gemma-spec"
# Node metadata the provider adds to a request when the stack lists several placements: which one it is and
# what came of those before it (components/tpu/placements.py). Left out of the fingerprint, like the label.
PLACEMENT_METADATA_KEY = "gemma-placement"


@dataclass(frozen=True)
class FlexStart:
    """Dynamic Workload Scheduler: wait until chips are available, then run at most `max_run_duration_seconds`."""

    max_run_duration_seconds: int


@dataclass(frozen=True)
class Spot:
    """Spot VMs: no run limit, preemptible at any time."""


@dataclass(frozen=True)
class Guaranteed:
    """On-demand (guaranteed) chips, optionally from a named reservation in the same zone."""

    reservation: str | None = None


Provisioning = FlexStart | Spot | Guaranteed

# The body's fields that say the tier: a placement replaces exactly these (and the node's parent zone).
TIER_KEYS = ("provisioningModel", "runDuration", "spot", "guaranteed", "reservationName")


@dataclass(frozen=True)
class Placement:
    """One more zone and tier to ask in when the ones before it are refused, fail or time out."""

    zone: str
    provisioning: Provisioning


def tier_name(provisioning: Provisioning) -> str:
    """The stack file's word for a tier (stacks/tpu.py ProvisioningModel values)."""
    match provisioning:
        case FlexStart():
            return "flex-start"
        case Spot():
            return "spot"
        case Guaranteed():
            return "guaranteed"
    raise TypeError(f"unknown provisioning {provisioning!r}")  # pragma: no cover - exhaustive above


@dataclass(frozen=True)
class QueuedResourceSpec:
    """Everything the request says, as plain values (only the instance metadata may hold Pulumi outputs)."""

    project: str
    zone: str
    queued_resource_id: str
    node_id: str
    accelerator_type: str
    runtime_version: str
    service_account_email: str
    # The startup script; like `metadata` values it may be a Pulumi output (passed as-is).
    startup_script: object
    provisioning: Provisioning
    network: str = "default"
    subnetwork: str | None = None
    enable_external_ips: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # Further instance metadata beside the startup script (values may be Pulumi outputs; passed as-is).
    metadata: Mapping[str, object] = field(default_factory=dict)
    network_tags: Sequence[str] = ()
    valid_until_seconds: int | None = None
    description: str = "gemma-serving: vLLM on TPU"

    def __post_init__(self) -> None:
        for key, value in (("queuedResourceId", self.queued_resource_id), ("nodeId", self.node_id)):
            if not RFC1035_ID.match(value):
                raise ValueError(f"{key} {value!r}: use 1-63 lowercase letters, digits or '-', starting with a letter")
        if isinstance(self.provisioning, FlexStart) and self.provisioning.max_run_duration_seconds <= 0:
            raise ValueError("maxRunDuration must be positive for flex-start")

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.zone}"


def google_duration(seconds: int) -> str:
    """protobuf Duration in JSON: whole seconds with an `s` suffix."""
    return f"{seconds}s"


def reservation_name(project: str, zone: str, reservation: str) -> str:
    if reservation.startswith("projects/"):
        return reservation
    return f"projects/{project}/locations/{zone}/reservations/{reservation}"


def build_request_body(spec: QueuedResourceSpec) -> dict[str, Any]:
    """The JSON body of `POST .../queuedResources?queuedResourceId=...` (the provider adds the fingerprint)."""
    network_config: dict[str, Any] = {"network": spec.network, "enableExternalIps": spec.enable_external_ips}
    if spec.subnetwork:
        network_config["subnetwork"] = spec.subnetwork
    node: dict[str, Any] = {
        "acceleratorType": spec.accelerator_type,
        "runtimeVersion": spec.runtime_version,
        "description": spec.description,
        "networkConfig": network_config,
        # Scope cloud-platform and let IAM decide: the account itself holds only the roles it needs.
        "serviceAccount": {"email": spec.service_account_email, "scope": [CLOUD_PLATFORM_SCOPE]},
        "metadata": {**dict(sorted(spec.metadata.items())), "startup-script": spec.startup_script},
        "labels": dict(sorted(spec.labels.items())),
    }
    if spec.network_tags:
        node["tags"] = list(spec.network_tags)
    body: dict[str, Any] = {
        "tpu": {"nodeSpec": [{"parent": spec.parent, "nodeId": spec.node_id, "node": node}]},
    }
    body.update(tier_fields(spec.provisioning, spec.project, spec.zone))
    if spec.valid_until_seconds is not None:
        body["queueingPolicy"] = {"validUntilDuration": google_duration(spec.valid_until_seconds)}
    return body


def with_fingerprint_label(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the resolved body whose node carries the `gemma-spec` fingerprint label."""
    labelled: dict[str, Any] = json.loads(json.dumps(body))
    for node_spec in labelled.get("tpu", {}).get("nodeSpec", []):
        node_spec.setdefault("node", {}).setdefault("labels", {})[SPEC_LABEL] = fingerprint(body)
    return labelled


def placement_body(body: Mapping[str, Any], project: str, zone: str, tier: Mapping[str, Any]) -> dict[str, Any]:
    """The request for another placement: the same node, its parent in ``zone``, the tier fields ``tier``."""
    placed: dict[str, Any] = {key: value for key, value in json.loads(json.dumps(body)).items() if key not in TIER_KEYS}
    for node_spec in placed.get("tpu", {}).get("nodeSpec", []):
        node_spec["parent"] = f"projects/{project}/locations/{zone}"
    placed.update(json.loads(json.dumps(tier)))
    return placed


def tier_fields(provisioning: Provisioning, project: str, zone: str) -> dict[str, Any]:
    """The body's tier fields (TIER_KEYS) for one provisioning model; a reservation is named in ``zone``."""
    match provisioning:
        case FlexStart(max_run_duration_seconds=seconds):
            return {
                "provisioningModel": "FLEX_START",
                "runDuration": {"maxRunDuration": google_duration(seconds)},
            }
        case Spot():
            return {"spot": {}}
        case Guaranteed(reservation=None):
            return {"guaranteed": {}}
        case Guaranteed(reservation=str(reservation)):
            return {
                "guaranteed": {"reserved": True},
                "reservationName": reservation_name(project, zone, reservation),
            }
    raise TypeError(f"unknown provisioning {provisioning!r}")  # pragma: no cover - exhaustive above


def fingerprint(body: Mapping[str, Any]) -> str:
    """A short, label-safe digest of the request, ignoring the fingerprint label itself."""
    canonical = json.loads(json.dumps(body))
    for node_spec in canonical.get("tpu", {}).get("nodeSpec", []):
        node_spec.get("node", {}).get("labels", {}).pop(SPEC_LABEL, None)
        node_spec.get("node", {}).get("metadata", {}).pop(PLACEMENT_METADATA_KEY, None)
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return digest[:20]


def fingerprint_label(queued_resource: Mapping[str, Any]) -> str | None:
    """The fingerprint label of a queued resource as Google returns it, if it carries one."""
    try:
        labels = queued_resource["tpu"]["nodeSpec"][0]["node"].get("labels") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    value = labels.get(SPEC_LABEL)
    return value if isinstance(value, str) else None
