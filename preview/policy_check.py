"""The policy pack's guardrails on the offline plan: what `pulumi up --policy-pack policy` would refuse, the
preview says first.

Why here: the pack runs only under the Pulumi CLI, so a stack it refuses (a guaranteed TPU request, a
public service) previewed cleanly and failed at `pulumi up`. The preview runs the same `GUARDRAILS`
(policy/rules.py) over every resource it captured, with the enforcement levels of the same
`--policy-pack-config` file the CLI would read, and names the stack key behind each rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from policy.rules import GUARDRAILS
from preview.capture import CapturedResource

# The stack-file keys that decide what each guardrail judges: where to look when it fires.
STACK_KEYS: dict[str, str] = {
    "cloud-run-not-public": "cloudRun.invokers / cloudRun.ingress",
    "bucket-not-public": "bucket",
    "bucket-private": "bucket",
    "serving-identity-writes-only-compile-cache": "compileCache",
    "gpu-service-cpu-always-allocated": "cloudRun",
    "gpu-service-limit-matches-accelerator": "accelerator",
    "gpu-service-concurrency-covers-batch": "cloudRun.concurrency / vllm.maxNumSeqs",
    "gpu-service-model-mount-uid-gid": "cloudRun.mount.uid / cloudRun.mount.gid",
    "images-pinned": "image",
    "vllm-port-not-public": "tpu.publicEndpoint / tpu.allowedSourceRanges",
    "vllm-behind-route-guard": "the program's launch line (vllm.extraArgs, cloudRun.env / gke.env)",
    "tpu-queued-resource-bounded": "tpu.provisioning.model (and tpu.placements[].model)",
    "no-plaintext-secrets": "hfToken / cloudRun.env",
    "gke-service-not-public": "gke.gateway",
    "gke-images-pinned": "image",
    "gke-model-mount-uid-gid": "gke",
    "gke-probes-present": "gke",
    "gke-no-credentials": "hfToken / gke",
    "gke-pod-hardened": "gke (the program's pod template)",
    "gke-network-policy-narrow": "gke.service.allowedSourceRanges",
    "gke-gateway-internal": "gke.gateway",
    "gke-picker-rbac-least-privilege": "gke.gateway",
    "gke-inference-pool-complete": "gke.gateway",
    "gke-private-least-privilege": "gke.cluster.controlPlane (publicEndpoint / authorizedNetworks)",
}
MANDATORY, ADVISORY, DISABLED = "mandatory", "advisory", "disabled"
_LEVELS = (MANDATORY, ADVISORY, DISABLED)


class PolicyConfigError(ValueError):
    """The --policy-pack-config file cannot be read the way the Pulumi CLI reads it."""


@dataclass(frozen=True)
class PolicyViolation:
    rule: str
    level: str
    resource: CapturedResource
    message: str

    @property
    def stack_key(self) -> str:
        return STACK_KEYS.get(self.rule, "the program (no stack key)")

    def line(self) -> str:
        return (
            f"[{self.rule}, {self.level}] stack key {self.stack_key}: {self.resource.type} {self.resource.name}: "
            f"{self.message}"
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "enforcementLevel": self.level,
            "stackKey": self.stack_key,
            "resourceType": self.resource.type,
            "resource": self.resource.name,
            "message": self.message,
        }


@dataclass(frozen=True)
class PolicyReport:
    violations: tuple[PolicyViolation, ...]
    # Guardrails that could not judge a resource offline (a value known only after `pulumi up`).
    unjudged: tuple[str, ...]

    @property
    def refused(self) -> bool:
        return any(violation.level == MANDATORY for violation in self.violations)


def enforcement_levels(path: Path | None) -> dict[str, str]:
    """Each guardrail's level: mandatory, or what a Pulumi policy config file sets (`{"all": ..., "<rule>":
    "advisory" | {"enforcementLevel": ...}}`, the format of `pulumi up --policy-pack-config`)."""
    levels = {guardrail.name: MANDATORY for guardrail in GUARDRAILS}
    if path is None:
        return levels
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PolicyConfigError(f"--policy-pack-config {path}: {error}") from error
    if not isinstance(document, Mapping):
        raise PolicyConfigError(f"--policy-pack-config {path}: expected a JSON object of policy names")
    if "all" in document:
        level = _level(document["all"], "all", path)
        levels = dict.fromkeys(levels, level)
    for name, value in document.items():
        if name == "all":
            continue
        if name not in levels:
            raise PolicyConfigError(
                f"--policy-pack-config {path}: {name!r} is not a policy of this pack; allowed: all, "
                f"{', '.join(sorted(levels))}"
            )
        levels[name] = _level(value, name, path)
    return levels


def _level(value: Any, name: str, path: Path) -> str:  # noqa: ANN401 - a JSON value
    level = value.get("enforcementLevel", MANDATORY) if isinstance(value, Mapping) else value
    if level not in _LEVELS:
        raise PolicyConfigError(f"--policy-pack-config {path}: {name}: {level!r}; allowed: {', '.join(_LEVELS)}")
    return str(level)


def judge_plan(resources: Iterable[CapturedResource], levels: Mapping[str, str]) -> PolicyReport:
    """Every guardrail over every captured resource, as the pack would judge them at `pulumi up`."""
    violations: list[PolicyViolation] = []
    unjudged: list[str] = []
    for resource in resources:
        for guardrail in GUARDRAILS:
            level = levels.get(guardrail.name, MANDATORY)
            if level == DISABLED or not guardrail.applies_to(resource.type):
                continue
            try:
                messages = guardrail.violations(resource.type, resource.inputs)
            except UnknownValueError as unknown:
                unjudged.append(f"{guardrail.name} on {resource.name}: {unknown.message}")
                continue
            violations += [PolicyViolation(guardrail.name, level, resource, message) for message in messages]
    return PolicyReport(tuple(violations), tuple(unjudged))
