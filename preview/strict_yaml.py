"""Read a Pulumi YAML file the way the Pulumi CLI does: a key written twice is an error, not the last value.

Why: PyYAML keeps the last of two equal keys without a word, so a stack file with `gemma-serving:vllm`
twice previewed one block while a reader trusted the other. The Pulumi CLI (Go's yaml.v3) refuses such a
file ("mapping key ... already defined at line N"); the offline plan must refuse what `pulumi up` would.
"""

from __future__ import annotations

from typing import Any

import yaml


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


def load(text: str) -> Any:  # noqa: ANN401 - any YAML document
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a (C) SafeLoader
