"""Read resource properties the same way whether they come from the Pulumi engine or from the mocks.

Why one reader: the policy pack receives properties from the engine (mappings and sequences wrapped in
proxies that raise on values unknown during preview, secrets already unwrapped), while the offline plan
and the tests hand over plain dicts and lists (secrets still wrapped as
``{"4dabf18193072939515e22adb298388d": "<secret sig>", "value": ...}``, unknowns as
``pulumi.output.Unknown``). Policies written against these helpers behave the same in both places.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi.output import Unknown
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UnknownValueError

# Pulumi's wire signature key and the signature that marks a secret (pulumi/sdk properties.go).
SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270"  # noqa: S105 - a wire marker
# What the engine sends in place of a value computed later (pulumi.runtime.rpc.UNKNOWN).
ENGINE_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def unwrap(value: Any) -> Any:  # noqa: ANN401 - properties are untyped JSON-like data
    """The plain value behind a wire-form secret wrapper (secrets are checked like any other value)."""
    while isinstance(value, Mapping) and value.get(SIGNATURE_KEY) == SECRET_SIGNATURE:
        value = value.get("value")
    return value


def is_unknown(value: Any) -> bool:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """True for a value that a preview cannot know yet (an output of a resource not created)."""
    return isinstance(value, Unknown) or (isinstance(value, str) and value == ENGINE_UNKNOWN)


def field(value: Any, *path: str | int) -> Any:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """The value at `path` (keys and list indices), or None when any step is absent.

    Raises pulumi-policy's ``UnknownValueError`` when a step is unknown during preview, which the policy
    pack turns into an advisory "can't run during preview" instead of a false pass or a false failure.
    """
    current = unwrap(value)
    walked: list[str] = []
    for step in path:
        walked.append(str(step))
        if isinstance(step, int):
            if not is_sequence(current) or not -len(current) <= step < len(current):
                return None
            current = current[step]
        else:
            if not isinstance(current, Mapping) or step not in current:
                return None
            current = current[step]
        current = unwrap(current)
        if is_unknown(current):
            raise UnknownValueError(UNKNOWN_OBJECT_VALUE, walked)
    return current


def has_key(value: Any, key: str) -> bool:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """Whether a mapping sets `key`, without reading the value (which may be unknown during preview)."""
    value = unwrap(value)
    return isinstance(value, Mapping) and any(existing == key for existing in value)


def is_sequence(value: Any) -> bool:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """A list-like value (the engine's proxy or a plain list), never a string."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def items(value: Any) -> Iterator[Any]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """The elements of a list-like value (none when absent), secrets unwrapped, unknowns refused."""
    value = unwrap(value)
    if is_unknown(value):
        raise UnknownValueError(UNKNOWN_OBJECT_VALUE, [])
    if not is_sequence(value):
        return
    for raw in value:
        element = unwrap(raw)
        if is_unknown(element):
            raise UnknownValueError(UNKNOWN_OBJECT_VALUE, [])
        yield element


def mappings(value: Any) -> Iterator[Mapping[str, Any]]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """The mapping elements of a list-like value (e.g. a service's containers)."""
    for element in items(value):
        if isinstance(element, Mapping):
            yield element


def strings(value: Any) -> list[str]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """The string elements of a list-like value; a single string counts as a one-element list."""
    value = unwrap(value)
    if isinstance(value, str):
        return [] if is_unknown(value) else [value]
    return [element for element in items(value) if isinstance(element, str)]


def number(value: Any) -> float | None:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """A number as the engine sends it (floats, e.g. 8080.0) or as a numeric string; None otherwise."""
    value = unwrap(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def walk_strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    """Every known string inside a nested value, with a dotted path for messages (unknowns skipped)."""
    value = unwrap(value)
    if is_unknown(value):
        return
    if isinstance(value, str):
        yield ".".join(path), value
    elif isinstance(value, Mapping):
        for key in value:
            yield from walk_strings(_known_or_none(value, key), (*path, str(key)))
    elif is_sequence(value):
        for index in range(len(value)):
            yield from walk_strings(_known_or_none(value, index), (*path, str(index)))


def _known_or_none(container: Any, key: str | int) -> Any:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    # The engine's proxies raise on access to an unknown; a scan over everything just skips it.
    try:
        return container[key]
    except UnknownValueError:
        return None
