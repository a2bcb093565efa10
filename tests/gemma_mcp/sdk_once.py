"""What the MCP SDK derives from a tool's signature or an output schema, derived once per test process.

Why: the suite builds some ninety servers and opens as many client sessions. Each server derives every
tool's argument and result models and their JSON schemas again, and each client session compiles the
output schema of every tool it calls, checking it against the JSON Schema meta-schema first (about 70 ms
of CPU a schema); together some 10 s of CPU a run. What is derived is a function of what it is derived
from: a tool's code (its annotations, evaluated in its module's globals), its defaults and the options
it is registered with; a schema's JSON. The context each `register` closes over enters none of it, so each
server still gets tools that call its own closures, and each session still validates every result.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from jsonschema.protocols import Validator
from mcp.client.session import ClientSession
from mcp.server.mcpserver.resources import templates as mcp_templates
from mcp.server.mcpserver.tools import base as mcp_tools
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata

_METADATA: dict[tuple[object, ...], FuncMetadata] = {}
_TOOLS: dict[tuple[object, ...], mcp_tools.Tool] = {}
_VALIDATORS: dict[str, Validator] = {}

_derive_tool = mcp_tools.Tool.from_function
_compile_validator = ClientSession._output_schema_validator


def _signature_key(fn: Callable[..., Any], *options: object) -> tuple[object, ...] | None:
    """What a tool's models are a function of, or None for a callable that has no code of its own (a wrapper
    or a callable object: derived as the SDK derives it)."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__"):
        return None
    key = (
        code,
        getattr(fn, "__defaults__", None),
        tuple(sorted((getattr(fn, "__kwdefaults__", None) or {}).items())),
        *options,
    )
    try:
        hash(key)
    except TypeError:  # an unhashable default
        return None
    return key


def metadata_once_per_signature(
    fn: Callable[..., Any], skip_names: Sequence[str] = (), structured_output: bool | None = None
) -> FuncMetadata:
    """The SDK's `func_metadata` (a tool's or a resource template's argument and result models)."""
    key = _signature_key(fn, tuple(skip_names), structured_output)
    if key is None:
        return func_metadata(fn, skip_names=skip_names, structured_output=structured_output)
    if key not in _METADATA:
        _METADATA[key] = func_metadata(fn, skip_names=skip_names, structured_output=structured_output)
    return _METADATA[key]


def tool_once_per_signature(cls: type[mcp_tools.Tool], /, fn: Callable[..., Any], **options: Any) -> mcp_tools.Tool:
    """`Tool.from_function`: derived once per signature and options, then given this server's own `fn`."""
    # The options' reprs: annotations and icons are pydantic models, whose repr lists every field.
    key = _signature_key(fn, repr(sorted(options.items())))
    if key is None:
        return _derive_tool(fn, **options)
    if key not in _TOOLS:
        _TOOLS[key] = _derive_tool(fn, **options)
    return _TOOLS[key].model_copy(update={"fn": fn})


def validator_once_per_schema(session: ClientSession, name: str, output_schema: dict[str, Any]) -> Validator:
    """The client's compiled validator for a tool's output schema (a schema that fails the meta-schema raises
    on every call, as the SDK's does: only a compiled validator is kept)."""
    key = json.dumps(output_schema, sort_keys=True)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = _compile_validator(session, name, output_schema)
    return _VALIDATORS[key]


@contextlib.contextmanager
def installed() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mcp_tools, "func_metadata", metadata_once_per_signature)
        patch.setattr(mcp_templates, "func_metadata", metadata_once_per_signature)
        patch.setattr(mcp_tools.Tool, "from_function", classmethod(tool_once_per_signature))
        patch.setattr(ClientSession, "_output_schema_validator", validator_once_per_schema)
        yield
