"""The Pulumi program: load the stack's settings, build its components, export what verify reads."""

from __future__ import annotations

import pulumi

from deploy import deploy, export_all
from stacks.loading import StackConfigError, load_running_stack

try:
    stack = load_running_stack()
except StackConfigError as error:
    # RunError ends the run with this message and no traceback: a list of what is wrong in the stack file.
    raise pulumi.RunError(f"stack {pulumi.get_stack()!r} has invalid settings:\n{error}") from None

settings = stack.settings
# Capacity warnings (e.g. max_num_seqs full-length sequences do not fit at once) show in preview and up.
for warning in stack.capacity.warnings:
    pulumi.log.warn(f"capacity: {warning}")
for quota in settings.quota_warnings():
    pulumi.log.warn(f"quota: {quota}")

if not settings.project:
    raise pulumi.RunError("gcp:project is not set: run `pulumi config set gcp:project <your-project-id>`")

export_all(deploy(settings, pulumi.get_stack()))
