"""The pulumi-command resources the project registers, by type token (see `components.wire`).

Why: the generated `pulumi_command.local.Command` registers its inputs through its `CommandArgs` class,
whose type hints the Pulumi SDK reads for every registration, ~12 ms of a plan (its module another few); the
import job's run-on-up command is the only pulumi-command resource a plan holds.
"""

from __future__ import annotations

from pulumi_command import _utilities as command_sdk

from components.wire import WireResource


class LocalCommand(WireResource):
    """`command.local.Command`: a command run where `pulumi up` runs (inputs: create, triggers, ...)."""

    TYPE = "command:local:Command"
    DEFAULTS = staticmethod(command_sdk.get_resource_opts_defaults)
    # A changed trigger runs the command again (the generated class replaces the resource on it).
    REPLACE_ON_CHANGES = ("triggers[*]",)
