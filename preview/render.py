"""Render a captured offline plan as a readable text plan or as one JSON document.

Why both: reviewers read the text on a pull request; tools (policy checks, diffs between branches) read
the JSON. Both come from the same capture, and both mask secrets and mark values only the cloud knows.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from preview.capture import Capture, CapturedResource
from preview.pulumi_sdk import SECRET_SIGNATURE, SIGNATURE_KEY, UNKNOWN, Unknown
from serving.naming import CANDIDATE_TAG

SECRET_MASK = "[secret]"  # noqa: S105 - the mask, not a secret
COMPUTED = "<computed>"
OFFLINE_BANNER = (
    "OFFLINE PLAN: the real program ran under Pulumi's mocks with this stack file's config. It is not "
    "`pulumi preview`: no provider defaults, no diff against deployed state, and values only Google Cloud "
    "knows are shown as <computed>."
)

# An extra block of the text plan, computed from the capture (the TPU request, what runs before vLLM) or
# from the settings (the capacity table); the caller lists the sections it wants, in order.
Section = Callable[[Capture], list[str]]


def clean(value: Any) -> Any:  # noqa: ANN401 - any captured input or output
    """Mask secrets and mark unknowns, recursively; floats that are whole numbers become ints."""
    if isinstance(value, dict):
        # Secrets arrive as {<sig key>: <secret sig>, "value": ...} (engine wire form) or keyed by the sig.
        is_secret = SECRET_SIGNATURE in value or value.get(SIGNATURE_KEY) == SECRET_SIGNATURE
        return SECRET_MASK if is_secret else {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(item) for item in value]
    if isinstance(value, Unknown) or (isinstance(value, str) and value == UNKNOWN):
        return COMPUTED
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def plan_document(capture: Capture, *, stack: str, project: str, notes: list[str]) -> dict[str, Any]:
    """The JSON form: `{"stack", "resources": [{"type", "name", "parent", "inputs"}], "outputs"}`."""
    return {
        "stack": stack,
        "project": project,
        "offline": True,
        "notes": notes,
        # What the program logs as a warning (capacity, quota), as the text plan's "Warnings" lines.
        "warnings": [message for severity, message in capture.logs if severity == "warning"],
        "resources": [
            {
                "type": resource.type,
                "name": resource.name,
                "parent": resource.parent,
                "urn": resource.urn,
                "inputs": clean(resource.inputs),
            }
            for resource in ordered(capture)
        ],
        "outputs": clean(capture.outputs),
    }


def ordered(capture: Capture) -> list[CapturedResource]:
    """Resources in tree order (parents before children), siblings by name then type, for stable output."""
    by_parent: dict[str | None, list[CapturedResource]] = {}
    urns = {resource.urn for resource in capture.resources}
    for resource in capture.resources:
        parent = resource.parent if resource.parent in urns else None
        by_parent.setdefault(parent, []).append(resource)
    result: list[CapturedResource] = []

    def walk(parent: str | None) -> None:
        for resource in sorted(by_parent.get(parent, []), key=lambda r: (r.type.count(":") < 2, r.name, r.type)):
            result.append(resource)
            walk(resource.urn)

    walk(None)
    return result


def _depth(resource: CapturedResource, capture: Capture) -> int:
    by_urn = {r.urn: r for r in capture.resources}
    depth = 0
    parent = resource.parent
    while parent in by_urn:
        depth += 1
        parent = by_urn[parent].parent
    return depth


def text_plan(capture: Capture, *, stack: str, project: str, notes: list[str], sections: Sequence[Section] = ()) -> str:
    """The text form; `sections` are the extra blocks (preview.sections.standard_sections lists them)."""
    lines = [f"Stack {stack!r} of project {project!r}", OFFLINE_BANNER, ""]
    if notes:
        lines += ["Notes:", *(f"  ! {note}" for note in notes), ""]
    resources = ordered(capture)
    lines.append(f"Resources to create ({len(resources)}):")
    for resource in resources:
        indent = "    " * _depth(resource, capture)
        lines.append(f"  + {indent}{resource.type:<48} {resource.name}")
    lines.append("")
    for service in capture.of_type("gcp:cloudrunv2/service:Service"):
        lines += describe_cloud_run_service(service, capture)
    for section in sections:
        lines += section(capture)
    lines.append("Outputs:")
    for key, value in clean(capture.outputs).items():
        shown = value if not isinstance(value, list) else shlex.join(str(v) for v in value)
        lines.append(f"  {key}: {shown}")
    warnings = [message for severity, message in capture.logs if severity in {"warning", "error"}]
    if warnings:
        lines += ["", "Warnings from the program:", *(f"  ! {message}" for message in warnings)]
    return "\n".join(lines) + "\n"


def describe_cloud_run_service(service: CapturedResource, capture: Capture) -> list[str]:
    """The settings a reviewer must see for a GPU service, read back from the registered inputs."""
    inputs = clean(service.inputs)
    template = inputs.get("template", {})
    container = (template.get("containers") or [{}])[0]
    resources = container.get("resources", {})
    limits = resources.get("limits", {})
    startup = container.get("startupProbe", {})
    liveness = container.get("livenessProbe", {})
    scaling = template.get("scaling", {})
    gcs = (template.get("volumes") or [{}])[0].get("gcs", {})
    mount = (container.get("volumeMounts") or [{}])[0]
    concurrency = template.get("maxInstanceRequestConcurrency")
    max_instances = scaling.get("maxInstanceCount")
    admitted = concurrency * max_instances if isinstance(concurrency, int) and isinstance(max_instances, int) else "?"
    invokers = [
        clean(r.inputs).get("member")
        for r in capture.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
        if r.parent == service.parent
    ]
    envs = ", ".join(f"{env.get('name')}={env.get('value')}" for env in container.get("envs") or [])
    rows = [
        (
            "GPU",
            (
                f"{limits.get('nvidia.com/gpu')} x {template.get('nodeSelector', {}).get('accelerator')} "
                f"(zonal redundancy {'off' if template.get('gpuZonalRedundancyDisabled') else 'on'})"
            ),
        ),
        (
            "CPU / memory",
            (
                f"{limits.get('cpu')} CPU / {limits.get('memory')} "
                f"(cpuIdle={str(resources.get('cpuIdle')).lower()}: instance-based billing; "
                f"startup CPU boost {'on' if resources.get('startupCpuBoost') else 'off'})"
            ),
        ),
        ("Image", container.get("image")),
        _weights_row(template, gcs, mount),
        ("Startup probe", f"{_probe(startup)}; window {_probe_window(startup)} s (initialDelay + period x failures)"),
        ("Liveness probe", _probe(liveness)),
        (
            "Concurrency",
            (
                f"{concurrency} per instance x {scaling.get('minInstanceCount')}..{max_instances} instances "
                f"(Cloud Run admits {admitted} requests at once)"
            ),
        ),
        ("Request timeout", template.get("timeout")),
        (
            "Access",
            f"ingress {inputs.get('ingress')}; invokers: {', '.join(invokers) or 'none granted'} (never allUsers)",
        ),
        ("Identity", template.get("serviceAccount")),
        ("Env", envs or "none"),
        ("Revision", _revision(template.get("revision"), inputs.get("name"))),
        ("Traffic", _traffic(inputs.get("traffics") or [], inputs.get("name"))),
    ]
    lines = [f"Cloud Run service {service.name} ({inputs.get('location')}):"]
    lines += [f"  {label + ':':<17} {value}" for label, value in rows]
    lines += ["  vLLM command:", "    " + _command_line(_entrypoint(container) + list(container.get("args") or [])), ""]
    return lines


def _entrypoint(container: dict[str, Any]) -> list[str]:
    """`vllm serve`, or the command the container states (a `python3 -c` launcher shown by name, not its source)."""
    commands = [str(part) for part in container.get("commands") or []]
    if len(commands) >= 3 and commands[:2] == ["python3", "-c"]:
        return ["python3", "-c", "<launcher: vLLM behind the route guard, serving/route_guard.py>", *commands[3:]]
    return commands or ["vllm", "serve"]


def _weights_row(template: dict[str, Any], gcs: dict[str, Any], mount: dict[str, Any]) -> tuple[str, str]:
    """How vLLM reaches the weights: the bucket's FUSE mount, or gs:// over Direct VPC egress (model.load: stream)."""
    vpc = template.get("vpcAccess") or {}
    if not gcs and vpc:
        interface = (vpc.get("networkInterfaces") or [{}])[0]
        streamed = (
            f"streamed from gs:// by vLLM (no mount); Direct VPC egress {vpc.get('egress')} on network "
            f"{interface.get('network')}, subnet {interface.get('subnetwork')}"
        )
        return ("Weights", streamed)
    access = "read-only" if gcs.get("readOnly") else "READ-WRITE"
    mounted = (
        f"gs://{gcs.get('bucket')} at {mount.get('mountPath')} ({access}; "
        f"options {','.join(gcs.get('mountOptions') or [])})"
    )
    return ("Model mount", mounted)


def _revision(revision: object, service_name: object) -> str:
    """A revision name, or what it will be once the template's computed inputs resolve."""
    if isinstance(revision, str) and revision != COMPUTED:
        return revision
    return f"{service_name}-<hash of the template>"


def _traffic(traffics: list[dict[str, Any]], service_name: object) -> str:
    """The split as Cloud Run will route it: gated (candidate tag, by revision name) or direct (LATEST)."""
    entries = []
    for target in traffics:
        if target.get("type") == "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST":
            who = "latest ready revision"
        else:
            who = _revision(target.get("revision"), service_name)
        tag = f" (tag {target['tag']}: https://{target['tag']}---<service host>)" if target.get("tag") else ""
        entries.append(f"{who} {target.get('percent', 0)}%{tag}")
    if not traffics:
        return "Cloud Run's default (latest ready revision 100%)"
    gated = any(target.get("tag") == CANDIDATE_TAG for target in traffics)
    how = "gated: `gemma-verify promote` moves traffic" if gated else "direct: each update takes all traffic"
    return f"{'; '.join(entries)} [{how}]"


def _probe(probe: dict[str, Any]) -> str:
    return (
        f"GET {probe.get('httpGet', {}).get('path')} every {probe.get('periodSeconds')} s, timeout "
        f"{probe.get('timeoutSeconds')} s, initial delay {probe.get('initialDelaySeconds')} s, "
        f"{probe.get('failureThreshold')} failures"
    )


def _probe_window(probe: dict[str, Any]) -> int | str:
    try:
        return int(probe["initialDelaySeconds"]) + int(probe["periodSeconds"]) * int(probe["failureThreshold"])
    except (KeyError, TypeError, ValueError):
        return "?"


def _command_line(argv: list[str]) -> str:
    """One flag per line, shell-quoted, so JSON values show exactly as the container receives them."""
    parts: list[str] = []
    for token in argv:
        quoted = shlex.quote(str(token))
        if str(token).startswith("--") and parts:
            parts.append(" \\\n      " + quoted)
        else:
            parts.append((" " if parts else "") + quoted)
    return "".join(parts)
