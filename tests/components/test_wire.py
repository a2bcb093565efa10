"""The resources `components.wire` registers by type token say what their generated SDK classes say.

Why: a `components.wire` class stands in for a generated pulumi-gcp (or pulumi-kubernetes) class so that a
plan need not import the SDK's subpackage; if it forgot a secret output, an alias or a secret input that the
generated class adds, `pulumi up` would store a value in plain text or replace a resource the SDK would have
matched. This reads the installed SDK's generated source (as text: importing it is what the classes avoid)
and compares, so an SDK upgrade that adds one fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
from pulumi_command import _utilities as command_sdk

from components.wire import WireResource, camel, kubernetes
from components.wire import command as wire_command
from components.wire import gcp as wire_gcp


def _subclasses(cls: type[WireResource]) -> list[type[WireResource]]:
    found: list[type[WireResource]] = []
    for sub in cls.__subclasses__():
        found.extend([sub] if hasattr(sub, "TYPE") else [])
        found.extend(_subclasses(sub))
    return found


# Importing the modules defines their classes; every subclass with a type token is compared.
MODULES = (wire_gcp, wire_command, kubernetes)
CLASSES = sorted(_subclasses(WireResource), key=lambda cls: cls.TYPE)


def _generated_source(token: str) -> str:
    """The generated module that registers `token` (pulumi_gcp/<module>/<file>.py, pulumi_command/local/...),
    found by its text."""
    package, module_and_file, _ = token.split(":")
    module = module_and_file.split("/")[0]
    sdks = {"gcp": "pulumi_gcp", "command": "pulumi_command", "kubernetes": "pulumi_kubernetes"}
    spec = importlib.util.find_spec(sdks[package])
    assert spec is not None
    assert spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))) / module
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if f"'{token}'" in text and "def _internal_init" in text:
            return text
    raise AssertionError(f"no generated class registers {token} under {folder}")


def _list_after(text: str, keyword: str) -> list[str]:
    # A list of string literals, which may hold brackets themselves (pulumi-command's "triggers[*]").
    match = re.search(rf"""{keyword}=(\[(?:\s*(?:"[^"]*"|'[^']*')\s*,?)*\s*\])""", text)
    return list(ast.literal_eval(match.group(1))) if match else []


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.TYPE)
def test_a_wire_class_adds_what_its_generated_class_adds(cls: type[WireResource]) -> None:
    """Guards against a secret stored in plain state, or a resource replaced for want of its SDK alias."""
    source = _generated_source(cls.TYPE)
    init = source[source.index("def _internal_init") :]
    assert list(cls.SECRET_OUTPUTS) == _list_after(init, "additional_secret_outputs")
    aliases = re.findall(r'pulumi\.Alias\(type_="([^"]+)"\)', init)
    assert list(cls.ALIASES) == aliases
    assert list(cls.REPLACE_ON_CHANGES) == _list_after(init, "replace_on_changes")
    secret_inputs = re.findall(
        r'__props__\.__dict__\["(\w+)"\] = None if \w+ is None else pulumi\.Output\.secret', init
    )
    assert list(cls.SECRET_INPUTS) == [camel(name) for name in secret_inputs]


def test_the_google_provider_adds_what_the_generated_provider_adds() -> None:
    """Guards against a provider that drops the SDK's environment fallbacks (GOOGLE_REGION, GOOGLE_ZONE...: a
    stack deployed from a shell that sets them would change region) or keeps its access token in plain state."""
    spec = importlib.util.find_spec("pulumi_gcp")
    assert spec is not None
    assert spec.submodule_search_locations
    source = (Path(next(iter(spec.submodule_search_locations))) / "provider.py").read_text(encoding="utf-8")
    init = source[source.index("def _internal_init") :]
    assert list(wire_gcp.GcpProvider.SECRET_OUTPUTS) == _list_after(init, "additional_secret_outputs")
    fallbacks = re.findall(r"if (\w+) is None:\s+\1 = _utilities\.get_env\(([^)]*)\)", init)
    assert fallbacks
    assert {name: ast.literal_eval(f"({names},)") for name, names in fallbacks} == wire_gcp.PROVIDER_ENV_FALLBACKS


def test_the_command_defaults_are_the_sdks() -> None:
    """Guards against the import job's command registered for another provider version than the installed
    pulumi-command SDK's (the engine would fetch or run a different plugin)."""
    ours, sdk = wire_command.command_defaults(), command_sdk.get_resource_opts_defaults()
    assert (ours.version, ours.plugin_download_url) == (sdk.version, sdk.plugin_download_url)


def test_every_class_was_compared() -> None:
    """Guards against a check that compares nothing because no class was found."""
    assert len(CLASSES) >= 25


def _kubernetes_source(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    spec = importlib.util.find_spec("pulumi_kubernetes")
    assert spec is not None
    assert spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))) / (group.split(".")[0] or "core") / version
    return (folder / f"{kind}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("key", sorted(kubernetes.BUILT_IN), ids=lambda key: f"{key[0]}:{key[1]}")
def test_a_kubernetes_kind_registers_what_its_generated_class_registers(key: tuple[str, str]) -> None:
    """Guards against a Deployment (or any built-in kind) that `pulumi up` would replace for want of its SDK
    aliases, or whose type token differs from the generated class's, which the state knows it by."""
    api_version, kind = key
    source = _kubernetes_source(api_version, kind)
    init = source[source.index("def _internal_init") :]
    assert f"'{kubernetes.type_token(api_version, kind)}'" in init
    assert list(kubernetes.BUILT_IN[key].aliases) == re.findall(r'pulumi\.Alias\(type_="([^"]+)"\)', init)
    assert kubernetes.BUILT_IN[key].status == ('__props__.__dict__["status"] = None' in init)
