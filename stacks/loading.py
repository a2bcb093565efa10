"""Turn a stack's Pulumi config into `StackSettings`, or into one clear message per mistake.

Why: Pulumi hands config to the program as strings (structured values as JSON); parsing them once, here,
means components never read `pulumi.Config` and a typo anywhere fails with the key and what is allowed.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from serving.input_files import MAX_NESTING, TOO_MANY_DIGITS, InputFileError, json_nesting
from serving.shapes import Accelerator
from stacks.capacity import StackCapacity, assess_stack, capacity_problems
from stacks.config_keys import config_key_problems
from stacks.credentials import credential_problems
from stacks.secrets import SECRET_KEYS
from stacks.settings import StackSettings, stack_variant
from stacks.typos import fold_typos

PROJECT = "gemma-serving"
# Provider config the program reads besides its own namespace.
GCP_PROJECT_KEY = "gcp:project"


class StackConfigError(ValueError):
    """A stack file that cannot be deployed; each line names a key and what is allowed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _decode(value: str) -> Any:  # noqa: ANN401 - config values are untyped until validated
    """Pulumi passes structured config as JSON text and scalars as plain strings. InputFileError for a value
    nested deeper than serving.input_files.MAX_NESTING (json would recurse into it) or holding an integer of
    more digits than Python converts."""
    text = value.strip()
    if text[:1] in "{[":
        nesting = json_nesting(text)
        if nesting > MAX_NESTING:
            raise InputFileError(f"nested {nesting} levels deep; at most {MAX_NESTING} are read")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
        except ValueError:  # the int-digits limit
            raise InputFileError(f"holds {TOO_MANY_DIGITS}") from None
    return value


def _decoded(config: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The `<project>:*` keys, secrets left out (stacks.secrets), their JSON decoded; each bad value named."""
    raw: dict[str, Any] = {}
    problems = []
    for key, value in config.items():
        name = key.removeprefix(prefix)
        if not key.startswith(prefix) or name in SECRET_KEYS:
            continue
        try:
            raw[name] = _decode(value)
        except InputFileError as error:
            problems.append(f"{key}: {error}")
    if problems:
        raise StackConfigError(problems)
    return raw


@dataclass(frozen=True)
class LoadedStack:
    """A stack's settings and its capacity verdict, assessed once when the settings were loaded.

    Why carried: the verdict decides whether the stack loads at all, and the program's warnings, the
    preview's capacity section and `verify memory` show the same one; each assessing it again would plan
    the same stack several times a run (and could read the project's files from another folder).
    """

    settings: StackSettings
    capacity: StackCapacity


# The stack the preview loaded, handed to the program it runs in-process (`given_to_the_program`).
_GIVEN: ContextVar[tuple[dict[str, str], LoadedStack] | None] = ContextVar("gemma_serving_given_stack", default=None)


def settings_from_config(
    config: Mapping[str, str], *, project: str = PROJECT, root: Path | None = None
) -> StackSettings:
    """Validate the `<project>:*` keys (plus `gcp:project`) of a flat Pulumi config map."""
    return load_stack(config, project=project, root=root).settings


def load_stack(config: Mapping[str, str], *, project: str = PROJECT, root: Path | None = None) -> LoadedStack:
    """Validate a flat Pulumi config map (`<project>:*` keys plus `gcp:project`) and assess its capacity.

    `root` is the Pulumi project folder a stack's relative files (capacity.profile, calibration records)
    are read from; unset, the current directory, which is the project folder when Pulumi runs the program.
    """
    prefix = f"{project}:"
    # A misspelt provider key or namespace is the real cause of whatever else would be reported.
    misspelt = config_key_problems(config, project)
    if misspelt:
        raise StackConfigError(misspelt)
    # Secret values (stacks.secrets) never enter the settings: they stay Pulumi secrets.
    raw = _decoded(config, prefix)
    if "project" in raw:
        raise StackConfigError([f"{prefix}project: set the Google Cloud project as gcp:project instead"])
    if config.get(GCP_PROJECT_KEY):
        raw["project"] = config[GCP_PROJECT_KEY]
    # First, and alone: any later message could quote the value.
    leaks = credential_problems(raw, prefix)
    if leaks:
        raise StackConfigError(leaks)
    # The stack's platform model alone: a missing or unknown accelerator is named before any other key.
    variant = stack_variant(raw)
    if variant is None:
        raise StackConfigError([f"{prefix}accelerator: {_accelerator_problem(raw.get('accelerator'))}"])
    try:
        settings: StackSettings = variant.model_validate(raw)
    except ValidationError as error:
        raise StackConfigError(format_errors(error, project, variant)) from None
    # Will it fit? A stack whose weights or one full-length sequence cannot fit fails here, with numbers.
    try:
        model_key = "model.variant" if settings.model.id else "model.path"
        capacity = assess_stack(settings, root=root)
        problems = capacity_problems(capacity, model_key=model_key)
    except ValueError as error:
        problems = [str(error)]
    if problems:
        raise StackConfigError([f"{prefix}{problem}" for problem in problems])
    return LoadedStack(settings=settings, capacity=capacity)


def _accelerator_problem(value: object) -> str:
    """What is wrong with an `accelerator` that picks no platform, and the values that do."""
    if value is None:
        return "required but not set"
    return f"Input should be {Accelerator.choices()}"


def format_errors(error: ValidationError, project: str, variant: type[BaseModel]) -> list[str]:
    """One line per problem: `<project>:<key.path>: what is wrong and what is allowed` (`variant`: the
    stack's settings model, whose keys an unknown key is matched against)."""
    lines: list[str] = []
    items, meant = fold_typos(error.errors(include_url=False))
    for item in items:
        loc = [str(part) for part in item["loc"]]
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden" and tuple(item["loc"]) in meant:
            message = f"unknown key; did you mean {meant[tuple(item['loc'])]}?"
        elif item["type"] == "extra_forbidden":
            keys = sorted(_allowed_keys(variant, loc[:-1]))
            close = difflib.get_close_matches(loc[-1], keys, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}? " if close else ""
            message = f"unknown key (a typo?); {hint}allowed here: {', '.join(keys)}"
        elif item["type"] == "missing":
            message = "required but not set"
        key = f"{project}:{'.'.join(loc)}" if loc else f"{project}"
        # Model-level rules already name their keys in the message.
        lines.append(f"{key}: {message}" if loc else f"{project}:{message}")
    return lines


def _allowed_keys(model: type[BaseModel], path: Iterable[str]) -> list[str]:
    """The keys a stack file may write at `path` (walked through nested settings models)."""
    current: type[BaseModel] | None = model
    for part in path:
        if current is None:
            return []
        if part.isdigit():
            continue  # an item of a list block (tpu.placements.0): its model is the list's item type
        current = _nested_model(current, part)
    if current is None:
        return []
    return [field.alias or name for name, field in current.model_fields.items()]


def _nested_model(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return _model_in(field.annotation)
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:  # noqa: ANN401 - any typing construct
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if isinstance(annotation, types.UnionType) or origin in (typing.Union, tuple, list):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def current_config() -> dict[str, str]:
    """The config the Pulumi engine gave this program run (set in-process or through PULUMI_CONFIG)."""
    from pulumi.runtime import config as runtime_config  # noqa: PLC0415 - only the program needs Pulumi

    merged: dict[str, str] = {str(k): str(v) for k, v in runtime_config.get_config_env().items()}
    merged.update({str(k): str(v) for k, v in runtime_config.CONFIG.get().items()})
    return merged


def load_running_stack() -> LoadedStack:
    """Parse the running stack's config once; the program's single entry to its settings.

    Under `python -m preview` the stack was loaded already (`given_to_the_program`): the program reads
    that one, so a preview assesses the stack's capacity once, not once per reader.
    """
    config = current_config()
    given = _GIVEN.get()
    if given is not None and given[0] == config:
        return given[1]
    return load_stack(config)


@contextlib.contextmanager
def given_to_the_program(config: Mapping[str, str], stack: LoadedStack) -> Iterator[None]:
    """While the preview runs the program in-process, a program run with this config loads `stack`."""
    token = _GIVEN.set((dict(config), stack))
    try:
        yield
    finally:
        _GIVEN.reset(token)
