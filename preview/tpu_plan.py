"""The TPU part of the text plan: the queued-resource request, the network edge and the startup script.

Why spelled out: a TPU stack's risks are in three places a resource list hides: the request body Google
receives (tier, run limit, internal IP, identity), the firewall rules (who can reach vLLM), and the
script that runs as root at every boot (what it fetches, which container it starts, with what flags).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from preview.capture import Capture, CapturedResource
from preview.render import clean
from serving.route_guard import launcher_source

QUEUED_RESOURCE = "pulumi-python:dynamic/tpu:QueuedResource"
FIREWALL = "gcp:compute/firewall:Firewall"
SECRET_READER = "gcp:secretmanager/secretIamMember:SecretIamMember"  # noqa: S105 - a type token
STARTUP_SCRIPT = "startup-script"


def script_value(script: str, name: str) -> str | None:
    """The value a startup script's data block assigns to NAME (one shell-quoted word), if it does."""
    for line in script.splitlines():
        if line.startswith(f"{name}="):
            words = shlex.split(line[len(name) + 1 :])
            return words[0] if words else ""
    return None


def startup_scripts(capture: Capture) -> list[tuple[str, str]]:
    """(node id, startup script) of every node every queued resource asks for."""
    found: list[tuple[str, str]] = []
    for resource in capture.of_type(QUEUED_RESOURCE):
        body = clean(resource.inputs).get("requestBody") or {}
        for spec in (body.get("tpu") or {}).get("nodeSpec") or []:
            script = ((spec.get("node") or {}).get("metadata") or {}).get(STARTUP_SCRIPT)
            found.append((str(spec.get("nodeId")), script if isinstance(script, str) else ""))
    return found


def pulled_image(script: str) -> str:
    """What a node's script pulls, and how docker is authenticated for it."""
    image = script_value(script, "IMAGE") or "<not in the script>"
    host = script_value(script, "REGISTRY_HOST")
    how = f"docker logs in to {host} as the node's account" if host else "anonymous pull"
    return f"{image} ({how})"


def _tier(body: dict[str, Any]) -> str:
    if body.get("provisioningModel") == "FLEX_START":
        run = (body.get("runDuration") or {}).get("maxRunDuration")
        return f"flex-start, max run duration {run} (Google deletes the node after it)"
    if "spot" in body:
        return "spot (preemptible at any time; runs until deleted)"
    if "guaranteed" in body:
        reservation = body.get("reservationName")
        return "guaranteed" + (f" from reservation {reservation}" if reservation else " (on-demand quota)")
    return "NO TIER SET"


def _placement_rows(placements: list[dict[str, Any]], deadline: object) -> list[tuple[str, str]]:
    """With tpu.placements: each zone and tier in the order `pulumi up` tries them (the body is the first's)."""
    if not placements:
        return []
    rows = [
        (
            "Placement" if index == 0 else "then",
            f"{index + 1}. {placement.get('zone')} {_tier(placement.get('tier') or {})}",
        )
        for index, placement in enumerate(placements)
    ]
    rows.append(
        (
            "Fallback",
            (
                f"the next placement when one is refused, fails or waits {deadline} s; at most "
                f"{len(placements)} x {deadline} s in all; the body below is the first placement's"
            ),
        )
    )
    return rows


def describe_queued_resource(resource: CapturedResource, capture: Capture) -> list[str]:
    inputs = clean(resource.inputs)
    body: dict[str, Any] = inputs.get("requestBody") or {}
    spec = ((body.get("tpu") or {}).get("nodeSpec") or [{}])[0]
    node = spec.get("node") or {}
    network = node.get("networkConfig") or {}
    script = (node.get("metadata") or {}).get(STARTUP_SCRIPT, "")
    queueing = (body.get("queueingPolicy") or {}).get("validUntilDuration")
    where = f"{spec.get('nodeId')} in {inputs.get('zone')}"
    subnetwork = f"/{network['subnetwork']}" if network.get("subnetwork") else ""
    exposure = "EXTERNAL IP" if network.get("enableExternalIps") else "internal IP only"
    rows = [
        ("Node", f"{where}: {node.get('acceleratorType')}, runtime {node.get('runtimeVersion')}"),
        ("Tier", _tier(body)),
        *_placement_rows(inputs.get("placements") or [], inputs.get("activeDeadlineSeconds")),
        ("Queueing", f"Google fails the request after {queueing}" if queueing else "waits until capacity arrives"),
        ("Wait in `up`", f"{inputs.get('activeDeadlineSeconds')} s, then the request is withdrawn"),
        ("Network", f"{network.get('network')}{subnetwork}, {exposure}; tags {node.get('tags')}"),
        ("Identity", (node.get("serviceAccount") or {}).get("email")),
        ("Image", pulled_image(str(script))),
    ]
    shown = json.loads(json.dumps(body))
    for shown_spec in (shown.get("tpu") or {}).get("nodeSpec") or []:
        metadata = (shown_spec.get("node") or {}).get("metadata") or {}
        if STARTUP_SCRIPT in metadata:
            metadata[STARTUP_SCRIPT] = "<the startup script below>"
    lines = [f"TPU queued resource {inputs.get('queuedResourceId')} (project {inputs.get('project')}):"]
    lines += [f"  {label + ':':<14} {value}" for label, value in rows]
    lines += ["  Request body (POST v2alpha1 .../queuedResources; the provider adds the gemma-spec label):"]
    lines += ["    " + line for line in json.dumps(shown, indent=2, sort_keys=True).splitlines()]
    lines += ["  Startup script (instance metadata, runs as root at every boot), folded:"]
    lines += ["    | " + line for line in folded_script(str(script))]
    lines.append("")
    return lines


# The line components/tpu/startup_script.py writes after the values it renders; below it the script is
# the same fixed code for every stack.
END_OF_DATA = "# --- end of rendered data ---"
LAUNCHER_SHOWN = "'<launcher: vLLM behind the route guard, serving/route_guard.py>'"


def folded_script(script: str) -> list[str]:
    """The script's header and rendered data (what differs per stack), then one line for the fixed code.

    Why folded: the whole script is 200+ lines of which reviewers need the values; the JSON plan keeps it
    whole (resources[].inputs.requestBody.tpu.nodeSpec[].node.metadata["startup-script"]).
    """
    # The route guard's launcher is the same fixed code on every node (its config, the next word, differs).
    lines = script.replace(shlex.quote(launcher_source()), LAUNCHER_SHOWN).splitlines()
    if END_OF_DATA not in lines:
        return lines
    end = lines.index(END_OF_DATA) + 1
    rest = len(lines) - end
    fold = (
        f"... {rest} more lines: the fixed code of components/tpu/startup_script.py (fetch the weights and the "
        "API key, log docker in, start vLLM, wait for /health); the whole script is in the FORMAT=json plan"
    )
    return [*lines[:end], fold]


def describe_firewalls(capture: Capture) -> list[str]:
    lines = ["Firewall rules:"]
    rules = capture.of_type(FIREWALL)
    for rule in rules:
        inputs = clean(rule.inputs)
        allows = ", ".join(
            f"{allow.get('protocol')}:{','.join(allow.get('ports') or ['all'])}" for allow in inputs.get("allows") or []
        )
        lines.append(
            f"  {rule.name}: {inputs.get('direction')} {allows} from {', '.join(inputs.get('sourceRanges') or [])} "
            f"to tags {', '.join(inputs.get('targetTags') or [])} (network {inputs.get('network')})"
        )
    if not rules:
        lines.append("  none (no port is opened)")
    readers = [clean(r.inputs) for r in capture.of_type(SECRET_READER)]
    lines.append("Secret readers:")
    lines += [f"  {r.get('secretId')}: {r.get('role')} for {r.get('member')}" for r in readers] or ["  none"]
    return [*lines, ""]


def tpu_section(capture: Capture) -> list[str]:
    """The TPU part of the text plan (empty for stacks without a queued resource)."""
    queued = capture.of_type(QUEUED_RESOURCE)
    if not queued:
        return []
    lines: list[str] = []
    for resource in queued:
        lines += describe_queued_resource(resource, capture)
    return lines + describe_firewalls(capture)
