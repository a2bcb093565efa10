"""The Pulumi program: load the stack's settings, build its components, export what verify reads."""

from __future__ import annotations

import sys

import pulumi

from deploy import deploy, export_all
from stacks.loading import StackConfigError, load_stack_settings

try:
    settings = load_stack_settings()
except StackConfigError as error:
    # A clear list of what is wrong in the stack file, not a traceback.
    pulumi.log.error(f"stack {pulumi.get_stack()!r} has invalid settings:\n{error}")
    sys.exit(1)

if not settings.project:
    pulumi.log.error("gcp:project is not set: run `pulumi config set gcp:project <your-project-id>`")
    sys.exit(1)

export_all(deploy(settings, pulumi.get_stack()))
