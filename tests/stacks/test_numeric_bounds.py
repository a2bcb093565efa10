"""Every number a stack file sets is finite and bounded, and an absurd one is an error naming its key (issue 46).

Why: `capacity.runtimeOverheadGib: 1e308` ended the preview in an OverflowError traceback, and
`monitoring.budget.amount: 1e30` was a budget the Budget API (an int64 of units) refuses only at `pulumi up`.
A setting added later without an upper bound fails `test_every_numeric_setting_has_an_upper_bound`.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import typing
from collections.abc import Callable, Iterator
from typing import Any

import annotated_types
import pytest
from pydantic import ValidationError
from pydantic.fields import FieldInfo

import stacks
from stacks.adapters import LoraSlots
from stacks.base import SettingsModel
from stacks.bounds import MAX_BUDGET_UNITS
from stacks.loading import StackConfigError, load_stack
from stacks.monitoring import BudgetSettings, ThresholdSettings
from stacks.tpu import parse_duration
from tests.conftest import stack_config

# Numbers bounded by a validator rather than by the field's own le/lt, each checked below with a huge value.
VALIDATED: dict[tuple[str, str], str] = {
    ("LoraSlots", "max_rank"): "one of vLLM's --max-lora-rank choices",
    ("ThresholdSettings", "ttft_seconds"): "a bucket bound of vLLM's TTFT histogram",
    ("ThresholdSettings", "tpot_seconds"): "a bucket bound of vLLM's TPOT histogram",
    ("BudgetSettings", "thresholds"): "each in (0, 10]",
}


def _settings_models() -> Iterator[type[SettingsModel]]:
    for module in pkgutil.iter_modules(stacks.__path__):
        importlib.import_module(f"stacks.{module.name}")
    pending = list(SettingsModel.__subclasses__())
    seen: set[type[SettingsModel]] = set()
    while pending:
        model = pending.pop()
        if model not in seen:
            seen.add(model)
            pending += model.__subclasses__()
            yield model


def _is_numeric(annotation: Any) -> bool:
    if annotation in (int, float):
        return True
    return any(_is_numeric(argument) for argument in typing.get_args(annotation))


def _bounded(annotation: Any, metadata: list[Any]) -> bool:
    """An le/lt on the field or in its type, or a duration (parse_duration refuses more than a year)."""
    for item in [*metadata, *typing.get_args(annotation)]:
        if isinstance(item, annotated_types.Le | annotated_types.Lt) or getattr(item, "func", None) is parse_duration:
            return True
        if isinstance(item, FieldInfo) and _bounded(item.annotation, list(item.metadata)):
            return True
    return any(_bounded(argument, []) for argument in typing.get_args(annotation))


def _numeric_fields() -> list[tuple[type[SettingsModel], str, FieldInfo]]:
    return [
        (model, name, field)
        for model in _settings_models()
        for name, field in model.model_fields.items()
        if _is_numeric(field.annotation)
    ]


def test_every_numeric_setting_has_an_upper_bound() -> None:
    """A number without an upper bound reaches arithmetic that overflows (1e308 GiB) or an API that refuses it."""
    fields = _numeric_fields()
    assert len(fields) > 50  # the walk found the settings
    unbounded = [
        f"{model.__module__}.{model.__name__}.{name}"
        for model, name, field in fields
        if (model.__name__, name) not in VALIDATED and not _bounded(field.annotation, list(field.metadata))
    ]
    assert unbounded == []


@pytest.mark.parametrize(
    ("build", "key"),
    [
        (lambda: LoraSlots(max_rank=10**9), "is not a --max-lora-rank of vLLM"),
        (lambda: ThresholdSettings(ttft_seconds=1e308), "ttftSeconds: 1e\\+308 is not a bucket bound"),
        (lambda: ThresholdSettings(tpot_seconds=1e308), "tpotSeconds: 1e\\+308 is not a bucket bound"),
        (lambda: BudgetSettings(thresholds=(1e308,)), "monitoring.budget.thresholds"),
    ],
    ids=["max-rank", "ttft", "tpot", "budget-thresholds"],
)
def test_the_validator_bounded_numbers_refuse_a_huge_value(build: Callable[[], object], key: str) -> None:
    """Each number in VALIDATED is bounded by its validator: a huge value is refused, never accepted."""
    with pytest.raises(ValidationError, match=key):
        build()


def _problems(stack: str, key: str, path: list[str], value: object) -> list[str]:
    values = dict(stack_config(stack).values)
    name = f"gemma-serving:{key}"
    block = json.loads(values.get(name, "{}"))
    target = block
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
    values[name] = json.dumps(block)
    with pytest.raises(StackConfigError) as raised:
        load_stack(values)
    return raised.value.problems


def test_a_runtime_overhead_of_1e308_gib_is_an_error_naming_the_key() -> None:
    """`capacity.runtimeOverheadGib: 1e308` raised OverflowError (cannot convert float infinity to integer)."""
    (problem,) = _problems("l4", "capacity", ["runtimeOverheadGib"], 1e308)
    assert problem == "gemma-serving:capacity.runtimeOverheadGib: Input should be less than or equal to 1024"


@pytest.mark.parametrize("amount", [1e30, MAX_BUDGET_UNITS + 1])
def test_a_budget_beyond_the_apis_int64_is_refused_naming_it(amount: float) -> None:
    """`monitoring.budget.amount: 1e30` previewed; the Budget API holds Money.units, an int64."""
    (problem,) = _problems("l4", "monitoring", ["budget", "amount"], amount)
    assert problem.startswith(f"gemma-serving:monitoring.budget.amount: {amount!r} is more than the Budget API holds")
    assert f"from 1 to {MAX_BUDGET_UNITS}" in problem


def test_the_largest_int64_budget_is_accepted() -> None:
    """The bound is the API's, not lower: 2^63 - 1 whole units is a budget the API takes."""
    values = dict(stack_config("l4").values)
    values["gemma-serving:monitoring"] = json.dumps(
        {"budget": {"billingAccount": "012345-6789AB-CDEF01", "amount": MAX_BUDGET_UNITS}}
    )
    assert load_stack(values).settings.monitoring.budget.amount == MAX_BUDGET_UNITS


@pytest.mark.parametrize(
    ("stack", "key", "path", "value", "expected"),
    [
        ("gke-l4x4", "gke", ["cpu"], float("inf"), "gemma-serving:gke.cpu: Input should be a finite number"),
        (
            "gke-l4x4",
            "gke",
            ["memoryGib"],
            float("nan"),
            "gemma-serving:gke.memoryGib: Input should be a finite number",
        ),
        ("l4", "cloudRun", ["mount", "uid"], 2**40, "gemma-serving:cloudRun.mount.uid: Input should be less than"),
        ("l4", "cloudRun", ["maxInstances"], 10**12, "gemma-serving:cloudRun.maxInstances: Input should be less than"),
        ("l4", "cloudRun", ["maxInstances"], 100_000, "is beyond Cloud Run's per-service maximum; allowed: 1-1000"),
        ("gke-l4x4", "gke", ["replicas", "scaleDownStabilization"], "2h", "less than or equal to 3600"),
        ("tpu-v6e", "tpu", ["validUntilDuration"], "100000d", "a duration is at most 365d"),
        ("l4", "vllm", ["maxNumBatchedTokens"], 10**15, "gemma-serving:vllm.maxNumBatchedTokens: Input should be less"),
    ],
    ids=[
        "inf-cpu",
        "nan-memory",
        "uid",
        "instances",
        "instances-platform",
        "stabilization",
        "duration",
        "batched-tokens",
    ],
)
def test_an_absurd_number_is_one_error_naming_its_key(
    stack: str, key: str, path: list[str], value: object, expected: str
) -> None:
    """Infinity, NaN and numbers past any platform's limit are refused at load with the key, never planned."""
    problems = _problems(stack, key, path, value)
    assert any(expected in problem for problem in problems), problems
