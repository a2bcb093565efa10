"""Every tool's published output schema is typed all the way down: no report an agent must guess the shape of.

Why: the SDK publishes each tool's result model as its output schema, the contract an agent reads before it
calls. A field typed `Any` (or `dict[str, Any]`) publishes `{}` or `additionalProperties: true`: the agent
learns nothing, and a report that drifts goes unnoticed. Each schema is walked, through its `$defs`, and
any node that declares no type (no `type`, `$ref`, `anyOf`/`oneOf`/`allOf` of typed members, `enum` or
`const`), an object open to anything, or an array of anything, fails with its path.
"""

from __future__ import annotations

from typing import Any

from tests.gemma_mcp.conftest import connect, make_context

_TYPED = {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"}


def untyped_paths(schema: dict[str, Any]) -> list[str]:
    """Each place in ``schema`` that leaves its values' type open, e.g. `.report{*}` (any object)."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    found: list[str] = []

    def walk(node: object, path: str, seen: frozenset[str]) -> None:
        if not isinstance(node, dict):
            found.append(path or "<root>")
            return
        if "$ref" in node:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            if name not in seen:
                walk(definitions[name], f"{path}->{name}", seen | {name})
            return
        if not _TYPED & set(node):
            found.append(path or "<root>")
            return
        for key in ("anyOf", "oneOf", "allOf"):
            for index, member in enumerate(node.get(key, [])):
                walk(member, f"{path}|{index}", seen)
        for name, member in node.get("properties", {}).items():
            walk(member, f"{path}.{name}", seen)
        extra = node.get("additionalProperties")
        if extra is True or (node.get("type") == "object" and "properties" not in node and extra is None):
            found.append(f"{path}{{*}}")
        elif isinstance(extra, dict):
            walk(extra, f"{path}{{*}}", seen)
        if "items" in node:
            walk(node["items"], f"{path}[]", seen)
        elif node.get("type") == "array" and "prefixItems" not in node:
            found.append(f"{path}[]")
        for index, member in enumerate(node.get("prefixItems", [])):
            walk(member, f"{path}[{index}]", seen)

    walk(schema, "", frozenset())
    return found


async def test_no_tool_publishes_an_untyped_field() -> None:
    """Guards against a tool whose report (or any other field) is `Any`: every tool, changes included."""
    async with connect(make_context(allow_changes=True)) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 18
    assert [tool.name for tool in tools if tool.output_schema is None] == []
    untyped = {tool.name: paths for tool in tools if (paths := untyped_paths(tool.output_schema or {}))}
    assert untyped == {}


def test_the_walk_finds_each_kind_of_untyped_field() -> None:
    """Guards against a walk that passes because it recognises nothing."""
    schema = {
        "type": "object",
        "properties": {
            "any": {},
            "open": {"type": "object", "additionalProperties": True},
            "anything_in_a_list": {"type": "array", "items": {}},
            "via_ref": {"$ref": "#/$defs/Loose"},
            "typed": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"Loose": {"type": "object", "properties": {"value": {"anyOf": [{"type": "integer"}, {}]}}}},
    }
    assert untyped_paths(schema) == [".any", ".open{*}", ".anything_in_a_list[]", ".via_ref->Loose.value|1"]
