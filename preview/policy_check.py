"""The policy pack's guardrails on the offline plan: what `pulumi up --policy-pack policy` would refuse, the
preview says first.

Why here: the pack runs only under the Pulumi CLI, so a stack it refuses (a guaranteed TPU request, a
public service) previewed cleanly and failed at `pulumi up`. The preview runs the same `GUARDRAILS`
(policy/rules.py) over every resource it captured, with the enforcement levels of the same
`--policy-pack-config` file the CLI would read, and names the stack key behind each rule.

A config file that disables or downgrades a rule is a waiver, and a waiver is shown: the plan lists each rule
the file changes, with the file, and a rule the pack makes mandatory that the file disables is still judged:
a stack that breaks it gets a WARNING naming the rule and the file (`pulumi up` with that file would say
nothing). The file is read as `serving.input_files` reads any named file: regular, small, shallow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from policy.rules import GUARDRAILS
from preview.capture import CapturedResource
from serving.input_files import CONFIG_FILE_MAX_BYTES, InputFileError, read_json_file

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
class PolicyLevels:
    """Each guardrail's enforcement level, and the --policy-pack-config file that set any (None: the pack's own)."""

    levels: Mapping[str, str]
    source: Path | None = None

    def level(self, rule: str) -> str:
        return self.levels.get(rule, MANDATORY)

    @property
    def waived(self) -> dict[str, str]:
        """The rules the config file makes advisory or disables (every rule is mandatory in the pack)."""
        return {rule: level for rule, level in sorted(self.levels.items()) if level != MANDATORY}


@dataclass(frozen=True)
class PolicyViolation:
    rule: str
    level: str
    resource: CapturedResource
    message: str
    # The config file that made a mandatory rule advisory or disabled, if one did.
    waived_by: Path | None = None

    @property
    def stack_key(self) -> str:
        return STACK_KEYS.get(self.rule, "the program (no stack key)")

    def line(self) -> str:
        waiver = f" ({self.level} by {self.waived_by}; mandatory in the pack)" if self.waived_by else ""
        return (
            f"[{self.rule}, {self.level}] stack key {self.stack_key}: {self.resource.type} {self.resource.name}: "
            f"{self.message}{waiver}"
        )

    def as_dict(self) -> dict[str, str]:
        found = {
            "rule": self.rule,
            "enforcementLevel": self.level,
            "stackKey": self.stack_key,
            "resourceType": self.resource.type,
            "resource": self.resource.name,
            "message": self.message,
        }
        if self.waived_by is not None:
            found["waivedBy"] = str(self.waived_by)
        return found


@dataclass(frozen=True)
class PolicyReport:
    violations: tuple[PolicyViolation, ...]
    # Guardrails that could not judge a resource offline (a value known only after `pulumi up`).
    unjudged: tuple[str, ...]
    levels: PolicyLevels = PolicyLevels({})

    @property
    def refused(self) -> bool:
        return any(violation.level == MANDATORY for violation in self.violations)

    @property
    def disabled_but_broken(self) -> tuple[PolicyViolation, ...]:
        """Violations of a mandatory rule the config file disabled: `pulumi up` with that file says nothing."""
        return tuple(violation for violation in self.violations if violation.level == DISABLED)

    def config_document(self) -> dict[str, object] | None:
        """The JSON plan's `policy.config`: the file and each rule it changes; None without a config file."""
        source = self.levels.source
        if source is None:
            return None
        return {
            "file": str(source),
            "waived": [
                {"rule": rule, "enforcementLevel": level, "packLevel": MANDATORY, "setBy": str(source)}
                for rule, level in self.levels.waived.items()
            ],
        }

    def waiver_summary(self) -> str | None:
        """One line for stderr: how many of the pack's rules the config file waives."""
        waived = self.levels.waived
        if not waived:
            return None
        counts = ", ".join(
            f"{sum(1 for set_to in waived.values() if set_to == level)} {level}"
            for level in (ADVISORY, DISABLED)
            if level in waived.values()
        )
        return (
            f"{self.levels.source} waives {len(waived)} of the pack's {len(self.levels.levels)} mandatory rules "
            f"({counts}; the plan lists them)"
        )

    def config_lines(self) -> list[str]:
        """The text plan's section for a config file: each rule it waives, and each broken rule it disabled."""
        source = self.levels.source
        if source is None:
            return []
        waived = self.levels.waived
        lines = [f"Policy config {source} (as `pulumi up --policy-pack-config` reads it):"]
        if not waived:
            lines.append("  every rule stays mandatory")
        for level in (ADVISORY, DISABLED):
            rules = [rule for rule, set_to in waived.items() if set_to == level]
            if rules:
                lines.append(
                    f"  {level} here, mandatory in the pack ({len(rules)} of {len(self.levels.levels)}): "
                    f"{', '.join(rules)}"
                )
        lines += [
            f"  WARNING: {violation.rule} is disabled by {source}, and this stack breaks it: {violation.resource.type} "
            f"{violation.resource.name}: {violation.message}"
            for violation in self.disabled_but_broken
        ]
        return [*lines, ""]


def enforcement_levels(path: Path | None) -> PolicyLevels:
    """Each guardrail's level: mandatory, or what a Pulumi policy config file sets (`{"all": ..., "<rule>":
    "advisory" | {"enforcementLevel": ...}}`, the format of `pulumi up --policy-pack-config`)."""
    levels = {guardrail.name: MANDATORY for guardrail in GUARDRAILS}
    if path is None:
        return PolicyLevels(levels)
    try:
        document: Any = read_json_file(path, max_bytes=CONFIG_FILE_MAX_BYTES)
    except InputFileError as error:
        raise PolicyConfigError(f"--policy-pack-config {error}") from None
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
    return PolicyLevels(levels, path)


def _level(value: Any, name: str, path: Path) -> str:  # noqa: ANN401 - a JSON value
    level = value.get("enforcementLevel", MANDATORY) if isinstance(value, Mapping) else value
    if level not in _LEVELS:
        raise PolicyConfigError(f"--policy-pack-config {path}: {name}: {level!r}; allowed: {', '.join(_LEVELS)}")
    return str(level)


def judge_plan(resources: Iterable[CapturedResource], levels: PolicyLevels) -> PolicyReport:
    """Every guardrail over every captured resource, as the pack would judge them at `pulumi up`; a disabled rule
    is judged too, so that what it lets through is said (at the level the config file gave it)."""
    violations: list[PolicyViolation] = []
    unjudged: list[str] = []
    for resource in resources:
        for guardrail in GUARDRAILS:
            level = levels.level(guardrail.name)
            if not guardrail.applies_to(resource.type):
                continue
            try:
                messages = guardrail.violations(resource.type, resource.inputs)
            except UnknownValueError as unknown:
                if level != DISABLED:
                    unjudged.append(f"{guardrail.name} on {resource.name}: {unknown.message}")
                continue
            waived_by = levels.source if level != MANDATORY else None
            violations += [PolicyViolation(guardrail.name, level, resource, m, waived_by) for m in messages]
    return PolicyReport(tuple(violations), tuple(unjudged), levels)
