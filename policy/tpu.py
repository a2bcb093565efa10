"""TPU queued resources must end by themselves: a max run duration (flex-start) or spot capacity.

Why: a guaranteed (on-demand) TPU request that nobody deletes bills by the hour forever, and the
hand-made deployment forgot one. Flex-start (Dynamic Workload Scheduler) stops after its
`runDuration.maxRunDuration`; spot capacity can be reclaimed at any time and costs far less. Anything
else needs a deliberate policy exception, not a quiet merge.

Two resource shapes carry a queued resource:
- the project's dynamic provider (`components/tpu/`): a Python dynamic resource whose `requestBody` is the
  v2alpha1 REST body, with `provisioningModel: FLEX_START` + `runDuration.maxRunDuration`, or `spot: {}`;
  with `tpu.placements` it also carries `placements: [{zone, provisioningModel, tier}]`, each `tier` the
  body fields a fallback placement asks with, judged like the body (a guaranteed fallback would otherwise
  slip past a flex-start first placement);
- pulumi-gcp's `tpu.V2QueuedResource`, whose schema (pulumi-gcp 10.2) has no tier, spot or run duration
  at all, so it can never satisfy this rule: use the dynamic provider instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, mappings

GCP_QUEUED_RESOURCE = "gcp:tpu/v2QueuedResource:V2QueuedResource"
DYNAMIC_PREFIX = "pulumi-python:dynamic"
# google.protobuf.Duration in JSON: seconds with an optional fraction and an `s` suffix.
_DURATION = re.compile(r"^(\d+)(\.\d+)?s$")


def queued_resource_body(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The queued-resource request carried by a resource, or None when it carries none.

    The marker for the dynamic provider is the REST body itself: a `requestBody` with `tpu.nodeSpec`.
    """
    if resource_type == GCP_QUEUED_RESOURCE:
        return props
    if not resource_type.startswith(DYNAMIC_PREFIX):
        return None
    body = field(props, "requestBody")
    if isinstance(body, Mapping) and field(body, "tpu", "nodeSpec") is not None:
        return body
    return None


def node_specs(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The nodes a request asks for, in REST (`tpu.nodeSpec`) or pulumi-gcp (`tpu.nodeSpecs`) spelling."""
    return [*mappings(field(body, "tpu", "nodeSpec")), *mappings(field(body, "tpu", "nodeSpecs"))]


def _duration_seconds(value: Any) -> float | None:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value.strip())
    return float(match.group(1) + (match.group(2) or "")) if match else None


def _is_spot(body: Mapping[str, Any]) -> bool:
    if field(body, "spot") is not None:  # the tier oneof: `spot: {}`
        return True
    for spec in node_specs(body):
        scheduling = field(spec, "node", "schedulingConfig")
        if field(scheduling, "spot") is True or field(scheduling, "preemptible") is True:
            return True
    return False


def _run_limit_problem(body: Mapping[str, Any]) -> str | None:
    """None when the request has a valid max run duration; otherwise what is wrong with it."""
    duration = field(body, "runDuration", "maxRunDuration")
    if duration is None:
        return "no runDuration.maxRunDuration"
    seconds = _duration_seconds(duration)
    if seconds is None or seconds <= 0:
        return f"runDuration.maxRunDuration {duration!r} is not a positive duration such as '14400s'"
    if field(body, "provisioningModel") != "FLEX_START":
        return "runDuration.maxRunDuration is set but provisioningModel is not FLEX_START (the only model it bounds)"
    return None


def check_queued_resource_bounded(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    body = queued_resource_body(resource_type, props)
    if body is None:
        return
    if resource_type == GCP_QUEUED_RESOURCE:
        yield (
            "pulumi-gcp's tpu.V2QueuedResource cannot express spot capacity or a max run duration, so the TPU "
            "would run (and bill) until someone deletes it; use the project's queued-resource provider "
            "(components/tpu) with flex-start maxRunDuration or spot"
        )
        return
    if not _is_spot(body) and (problem := _run_limit_problem(body)):
        yield (
            f"the queued resource is neither spot nor bounded ({problem}); use flex-start with "
            "runDuration.maxRunDuration, or spot, so the TPU stops billing by itself"
        )
    for number, placement in enumerate(mappings(field(props, "placements")), start=1):
        tier = field(placement, "tier")
        tier = tier if isinstance(tier, Mapping) else {}
        if not _is_spot(tier) and (problem := _run_limit_problem(tier)):
            yield (
                f"placement {number} ({field(placement, 'zone')} {field(placement, 'provisioningModel')}) is neither "
                f"spot nor bounded ({problem}); every tpu.placements entry must be flex-start with a "
                "maxRunDuration, or spot, so whichever is granted stops billing by itself"
            )


TPU_QUEUED_RESOURCE_BOUNDED = Guardrail(
    name="tpu-queued-resource-bounded",
    description="A TPU queued resource runs on spot capacity or with a max run duration (flex-start).",
    resource_types=frozenset({GCP_QUEUED_RESOURCE}),
    type_prefixes=(DYNAMIC_PREFIX,),
    check=check_queued_resource_bounded,
)
