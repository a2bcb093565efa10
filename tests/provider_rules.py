"""An oracle for the offline plan: the rules pulumi_gcp's own generated input types state, read from the package.

Why read the installed package instead of writing the limits down: pulumi_gcp's `*Args` classes are
generated from Google's API reference, and each property's docstring carries the rules Google enforces
("Minimum value is 1.", "Must be smaller than periodSeconds.", "Possible values are: `A`, `B`.", "The only
supported values for CPU are '1', '2', '4', '6', and '8'"). A table copied by hand drifts from them and
from the SDK pin; parsing the docstrings keeps the oracle as current as requirements.txt. Issue 35: the
Cloud Run plans shipped a sidecar probe whose timeout equalled its period and a 7-CPU container, both
refused by the API and both stated in these docstrings.

Where Google states a rule only in prose on a documentation page (the GPU exceptions to the CPU list, the
memory each CPU value allows, the GPU's minimum), `GPU_MINIMUM` and `MEMORY_PER_CPU_GIB` add it, each with
its page.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from preview.render import COMPUTED, SECRET_MASK

_WORD = re.compile(r"\s+")
_MINIMUM = re.compile(r"Minimum value is (-?\d+)")
_MAXIMUM = re.compile(r"Maximum value is (-?\d+)")
_MAXIMUM_FOR = re.compile(r"Maximum value for (\w+) probe is (\d+)")
_SMALLER_THAN = re.compile(r"Must be smaller than (\w+)")
_GREATER_OR_EQUAL = re.compile(r"Must be greater or equal than (\w+)")
_POSSIBLE = re.compile(r"Possible values are: ((?:`[^`]+`(?:, )?)+)")
_DEFAULT = re.compile(r"Defaults? to (\d+)")
_CPU_VALUES = re.compile(r"The only supported values for CPU are ((?:'\d+'(?:,? (?:and )?)?)+)")
_CPU_MEMORY = re.compile(r"[Ss]etting (\d+) (or more )?CPU requires at least (\d+)Gi of memory")
_ARGS_REF = re.compile(r"ForwardRef\('(\w+Args)'\)")


@dataclass(frozen=True)
class CpuRule:
    """A container's `limits.cpu` values and the memory some of them need (the `limits` docstring)."""

    values: frozenset[int]
    # (cpu, or more, at least GiB)
    memory_floors: tuple[tuple[int, bool, int], ...]


@dataclass
class PropertyRules:
    wire_name: str
    minimum: int | None = None
    maximum: int | None = None
    maximum_by_probe: dict[str, int] = field(default_factory=dict)
    smaller_than: str | None = None
    greater_or_equal: str | None = None
    possible: frozenset[str] | None = None
    default: int | None = None
    cpu: CpuRule | None = None
    nested: str | None = None  # the nested Args class name


def _normalize(name: str) -> str:
    return name.replace("_", "").lower()


def property_rules(docstring: str, wire_name: str) -> PropertyRules:
    """The rules one property docstring states."""
    text = _WORD.sub(" ", docstring or "")
    rules = PropertyRules(wire_name)
    if match := _MINIMUM.search(text):
        rules.minimum = int(match.group(1))
    if match := _MAXIMUM.search(text):
        rules.maximum = int(match.group(1))
    rules.maximum_by_probe = {kind.lower(): int(value) for kind, value in _MAXIMUM_FOR.findall(text)}
    if match := _SMALLER_THAN.search(text):
        rules.smaller_than = match.group(1)
    if match := _GREATER_OR_EQUAL.search(text):
        rules.greater_or_equal = match.group(1)
    if match := _POSSIBLE.search(text):
        rules.possible = frozenset(re.findall(r"`([^`]+)`", match.group(1)))
    if match := _DEFAULT.search(text):
        rules.default = int(match.group(1))
    if match := _CPU_VALUES.search(text):
        values = frozenset(int(v) for v in re.findall(r"'(\d+)'", match.group(1)))
        floors = tuple((int(cpu), bool(more), int(gib)) for cpu, more, gib in _CPU_MEMORY.findall(text))
        rules.cpu = CpuRule(values, floors)
    return rules


@functools.cache
def args_class(resource_type: str) -> type | None:
    """pulumi_gcp's Args class for a type token such as `gcp:cloudrunv2/service:Service`."""
    match = re.fullmatch(r"gcp:(\w+)/\w+:(\w+)", resource_type)
    if not match:
        return None
    module = importlib.import_module(f"pulumi_gcp.{match.group(1)}")
    found = getattr(module, f"{match.group(2)}Args", None)
    return found if isinstance(found, type) else None


@functools.cache
def class_rules(cls: type) -> dict[str, PropertyRules]:
    """Every property of a generated Args class, by its wire (camelCase) name, with its docstring's rules."""
    module = importlib.import_module(cls.__module__)
    rules: dict[str, PropertyRules] = {}
    for klass in cls.__mro__:
        for attribute in vars(klass).values():
            if not isinstance(attribute, property) or attribute.fget is None:
                continue
            wire = getattr(attribute.fget, "_pulumi_name", None)
            if wire is None or wire in rules:
                continue
            rule = property_rules(attribute.fget.__doc__ or "", wire)
            annotation = str(attribute.fget.__annotations__.get("return", ""))
            if nested := _ARGS_REF.search(annotation):
                rule.nested = nested.group(1)
                getattr(module, rule.nested)  # the class must exist in the same module
            rules[wire] = rule
    return rules


@dataclass(frozen=True)
class Finding:
    resource: str
    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.resource}: {self.path}: {self.problem}"


def _probe_kind(class_name: str) -> str | None:
    for kind in ("liveness", "startup", "readiness"):
        if kind in class_name.lower():
            return kind
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _sibling(values: Mapping[str, Any], rules: Mapping[str, PropertyRules], name: str) -> float | None:
    for wire, rule in rules.items():
        if _normalize(wire) == _normalize(name):
            value = _number(values.get(wire))
            if value is None and rule.default is not None:
                return float(rule.default)
            return value
    return None


def _check_value(
    value: Any,
    rule: PropertyRules,
    values: Mapping[str, Any],
    rules: Mapping[str, PropertyRules],
    kind: str | None,
) -> Iterator[str]:
    if value in (COMPUTED, SECRET_MASK):
        return
    if rule.possible is not None and isinstance(value, str) and value not in rule.possible:
        yield f"{value!r} is not among the possible values {sorted(rule.possible)}"
    number = _number(value)
    if number is None:
        return
    if rule.minimum is not None and number < rule.minimum:
        yield f"{value} is below the minimum {rule.minimum}"
    maximum = rule.maximum_by_probe.get(kind or "", rule.maximum)
    if maximum is not None and number > maximum:
        yield f"{value} is above the maximum {maximum}"
    if rule.smaller_than and (other := _sibling(values, rules, rule.smaller_than)) is not None and number >= other:
        yield f"{value} must be smaller than {rule.smaller_than} ({other:g})"
    other = _sibling(values, rules, rule.greater_or_equal) if rule.greater_or_equal else None
    if other is not None and number < other:
        yield f"{value} must be greater than or equal to {rule.greater_or_equal} ({other:g})"


def walk(cls: type, values: Any, path: str, context: PlanContext) -> Iterator[tuple[str, str]]:
    """(path, problem) for every rule the inputs of one Args class break, nested classes included."""
    if isinstance(values, list):
        for index, item in enumerate(values):
            yield from walk(cls, item, f"{path}[{index}]", context)
        return
    if not isinstance(values, Mapping):
        return
    rules = class_rules(cls)
    module = importlib.import_module(cls.__module__)
    kind = _probe_kind(cls.__name__)
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        rule = rules.get(key)
        if rule is None:
            if not key.startswith("__"):
                yield where, f"{cls.__name__} has no property {key!r}"
            continue
        if rule.nested is not None:
            yield from walk(getattr(module, rule.nested), value, where, context)
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            for problem in _check_value(item, rule, values, rules, kind):
                yield where, problem
        if rule.cpu is not None and isinstance(value, Mapping):
            yield from ((f"{where}.cpu", p) for p in context.cpu_problems(rule.cpu, value))


# Rules Google states only in prose, each with its page (read 2026-11); the docstrings above carry the rest.
# https://cloud.google.com/run/docs/configuring/services/gpu: "For NVIDIA RTX PRO 6000 Blackwell GPU, you
# must use a minimum of 20 CPU and 80 GiB of memory" (and L4 4 CPU / 16 GiB): the stated exception to the
# CPU list for the container the GPU attaches to ("the GPU can only be attached to one container").
GPU_MINIMUM: dict[str, tuple[int, int]] = {"nvidia-l4": (4, 16), "nvidia-rtx-pro-6000": (20, 80)}
# https://cloud.google.com/run/docs/configuring/services/cpu, "CPU and memory table": the memory range
# each CPU value allows (GiB; the lower bounds of 1 and 2 CPU are the 512 MiB second-generation floor of
# https://cloud.google.com/run/docs/configuring/services/memory-limits).
MEMORY_PER_CPU_GIB: dict[int, tuple[float, float]] = {1: (0.5, 4), 2: (0.5, 8), 4: (2, 16), 6: (4, 24), 8: (4, 32)}


@dataclass(frozen=True)
class PlanContext:
    """What a rule needs from outside the property: the GPU a Cloud Run template selects."""

    accelerator: str | None = None

    def cpu_problems(self, rule: CpuRule, limits: Mapping[str, Any]) -> Iterator[str]:
        cpu, memory_gib = _number(_as_number(limits.get("cpu"))), _gib(limits.get("memory"))
        if cpu is None:
            return
        gpu_minimum = GPU_MINIMUM.get(self.accelerator or "") if "nvidia.com/gpu" in limits else None
        if gpu_minimum is not None:
            min_cpu, min_gib = gpu_minimum
            if cpu < min_cpu or (memory_gib is not None and memory_gib < min_gib):
                yield f"the GPU container has {cpu:g} CPU / {memory_gib} GiB, below the {self.accelerator} minimum"
            if min_cpu > max(rule.values):
                return  # the GPU page's exception: this GPU's container takes its minimum and more
        if cpu not in rule.values:
            yield f"{cpu:g} is not a supported CPU value {sorted(rule.values)}"
            return
        for floor_cpu, or_more, gib in rule.memory_floors:
            applies = cpu >= floor_cpu if or_more else cpu == floor_cpu
            if applies and memory_gib is not None and memory_gib < gib:
                yield f"{cpu:g} CPU requires at least {gib}Gi of memory, not {memory_gib:g}Gi"
        low, high = MEMORY_PER_CPU_GIB[int(cpu)]
        if memory_gib is not None and not low <= memory_gib <= high:
            yield f"{cpu:g} CPU allows {low:g}-{high:g} GiB of memory, not {memory_gib:g}"


def _as_number(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    return value


def _gib(value: Any) -> float | None:
    if not isinstance(value, str) or not (match := re.fullmatch(r"(\d+)(Mi|Gi)", value)):
        return None
    return int(match.group(1)) / (1024 if match.group(2) == "Mi" else 1)


def plan_findings(document: Mapping[str, Any]) -> list[Finding]:
    """Every provider rule the JSON plan's resources break (a gcp type pulumi_gcp does not know is one too)."""
    findings = []
    for resource in document["resources"]:
        kind = str(resource["type"])
        if not kind.startswith("gcp:"):
            continue
        cls = args_class(kind)
        label = f"{kind} {resource['name']}"
        if cls is None:
            findings.append(Finding(label, "", "pulumi_gcp has no Args class for this type"))
            continue
        inputs = resource["inputs"]
        selector = ((inputs.get("template") or {}).get("nodeSelector") or {}) if isinstance(inputs, Mapping) else {}
        context = PlanContext(accelerator=selector.get("accelerator") if isinstance(selector, Mapping) else None)
        findings += [Finding(label, path, problem) for path, problem in walk(cls, inputs, "", context)]
    return findings


def docstring_cpu_values() -> frozenset[int]:
    """The CPU values pulumi_gcp documents for a Cloud Run service container."""
    rule = class_rules(args_class_by_name("cloudrunv2", "ServiceTemplateContainerResourcesArgs"))
    cpu = rule["limits"].cpu
    if cpu is None:  # pragma: no cover - a pulumi_gcp upgrade changed the wording: read it again
        raise AssertionError("pulumi_gcp no longer states the CPU values in ServiceTemplateContainerResourcesArgs")
    return cpu.values


def args_class_by_name(module: str, name: str) -> type:
    found = getattr(importlib.import_module(f"pulumi_gcp.{module}"), name)
    if not isinstance(found, type):  # pragma: no cover
        raise TypeError(name)
    return found
