"""Read a Pulumi YAML file the way the Pulumi CLI does: a key written twice is an error, not the last value;
and read it as data only: no aliases, nesting bounded.

Why: PyYAML keeps the last of two equal keys without a word, so a stack file with `gemma-serving:vllm`
twice previewed one block while a reader trusted the other. The Pulumi CLI (Go's yaml.v3) refuses such a
file ("mapping key ... already defined at line N"); the offline plan must refuse what `pulumi up` would.

Aliases (`*name`) are refused: a stack file of a few hundred bytes whose aliases refer to aliases (the
"billion laughs") expands into gigabytes once its values are written out as config (every reader does),
and a stack file has no need of them. Nesting deeper than serving.input_files.MAX_NESTING is refused too,
before PyYAML's constructor recurses into it. Both are found on the parser's event stream, which holds
neither expansion nor recursion.
"""

from __future__ import annotations

from typing import Any

import yaml

from serving.input_files import MAX_NESTING, TOO_MANY_DIGITS


class DuplicateKeyError(yaml.YAMLError):
    """A mapping in the file names the same key twice."""


class StrictLoader(yaml.CSafeLoader):
    """SafeLoader that refuses duplicate mapping keys, naming both lines.

    On libyaml's parser (PyYAML's C extension, in every wheel PyYAML publishes): the pure-Python one was
    a tenth of an offline plan's run once its imports were done.
    """


def _mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise DuplicateKeyError(
                f"line {line}: mapping key {key!r} already defined at line {seen[key]}; Pulumi refuses a file "
                "with a key written twice: keep one"
            )
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class UnsafeStructureError(yaml.YAMLError):
    """An alias, nesting deeper than the bound, or a scalar that cannot be a value (an integer of 5,000 digits)."""


def _check_structure(text: str) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=StrictLoader):
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent):
            raise UnsafeStructureError(
                f"line {line}: an alias (*{event.anchor}); write the value out: aliases are not read here, since a "
                "few of them can expand a small file into gigabytes"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise UnsafeStructureError(f"line {line}: nested more than {MAX_NESTING} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str) -> Any:  # noqa: ANN401 - any YAML document
    _check_structure(text)
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a (C) SafeLoader
    except ValueError as error:  # a scalar PyYAML's constructor cannot convert (the int-digits limit, a date)
        problem = TOO_MANY_DIGITS if "digits" in str(error) else f"a value that cannot be read ({error})"
        raise UnsafeStructureError(f"it holds {problem}") from None
