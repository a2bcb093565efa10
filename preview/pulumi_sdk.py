"""The Pulumi SDK internals the offline plan relies on, in one place (the SDK has no public API for them).

Why an adapter: running the program in-process under mocks needs the SDK's own test driver
(`run_pulumi_func`, `_sync_await`), its wire format for secrets and unknowns (`rpc`), and its settings
and config stores. They are not public and may move between SDK releases; importing them only here means
one module to fix, and tests/preview/test_pulumi_sdk.py names the installed SDK version when they move.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from pulumi.output import Unknown
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime import settings as sdk_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

SDK_VERSION = version("pulumi")
# The wire marker Pulumi wraps secret values in, the key it sits under, and the unknown-value marker.
SECRET_SIGNATURE: str = rpc._special_secret_sig
SIGNATURE_KEY: str = rpc._special_sig_key
UNKNOWN: str = rpc.UNKNOWN
# Where each registration's stack trace comes from (`skip_source_positions` replaces it).
SDK_STACK_TRACE = sdk_resource._get_stack_trace

__all__ = [
    "SDK_VERSION",
    "SECRET_SIGNATURE",
    "SIGNATURE_KEY",
    "UNKNOWN",
    "Unknown",
    "deserialize_properties",
    "reset_options",
    "root_resource",
    "run_pulumi_func",
    "set_all_config",
    "set_engine",
    "skip_source_positions",
    "sync_await",
]


def deserialize_properties(properties: Any) -> Any:  # noqa: ANN401 - the engine's protobuf Struct
    """A registration's inputs in wire form, unknowns kept (as the engine would receive them)."""
    return rpc.deserialize_properties(properties, keep_unknowns=True)


def reset_options() -> None:
    sdk_settings.reset_options()


def set_engine(engine: Any) -> None:  # noqa: ANN401 - a MockEngine
    sdk_settings.SETTINGS.engine = engine


def root_resource() -> Any:  # noqa: ANN401 - the stack resource, if the program made one
    return sdk_settings.get_root_resource()


def skip_source_positions() -> None:
    """Registrations carry no stack trace or source position: only an engine shows them, the mocks drop them.

    The SDK builds both for every resource from a traceback of the whole call stack (each frame's source
    line read): a third of the CPU of rendering a stack under the mocks.
    """
    sdk_resource._get_stack_trace = _no_stack_trace


def _no_stack_trace() -> Any:  # noqa: ANN401 - the SDK's generated protobuf message
    return source_pb2.StackTrace()


def sync_await(awaitable: Any) -> Any:  # noqa: ANN401 - whatever the awaitable returns
    return _sync_await(awaitable)
