"""The pulumi-command resources the project registers, by type token (see `components.wire`).

Why: the generated `pulumi_command.local.Command` registers its inputs through its `CommandArgs` class,
whose type hints the Pulumi SDK reads for every registration; and importing any of pulumi-command loads its
`_utilities`, which parses the package's version with parver (together ~2 % of a plan's instructions). The
import job's run-on-up command is the only pulumi-command resource a plan holds.
"""

from __future__ import annotations

import re
from importlib.metadata import version

import pulumi

from components.wire import WireResource

# A release version, which the SDK's semver conversion (`pulumi_command._utilities`) leaves as it is.
_RELEASE = re.compile(r"\d+\.\d+\.\d+")


def command_defaults() -> pulumi.ResourceOptions:
    """The SDK's resource defaults (`pulumi_command._utilities.get_resource_opts_defaults()`): the installed
    provider version and no plugin download URL. A pre-release version takes the SDK's own conversion."""
    installed = version("pulumi_command")
    if _RELEASE.fullmatch(installed) is None:
        from pulumi_command import _utilities  # noqa: PLC0415 - a pre-release: the SDK converts it to semver

        defaults: pulumi.ResourceOptions = _utilities.get_resource_opts_defaults()
        return defaults
    return pulumi.ResourceOptions(version=installed, plugin_download_url=None)


class LocalCommand(WireResource):
    """`command.local.Command`: a command run where `pulumi up` runs (inputs: create, triggers, ...)."""

    TYPE = "command:local:Command"
    DEFAULTS = staticmethod(command_defaults)
    # A changed trigger runs the command again (the generated class replaces the resource on it).
    REPLACE_ON_CHANGES = ("triggers[*]",)
