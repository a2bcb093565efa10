"""Typed wire builders for Cloud Storage blocks: pulumi-gcp's own input types, at no import cost.

Why: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested block is
typed as pulumi-gcp's `*ArgsDict` for it; a block built with the untyped `wire` is a `dict[str, Any]` that mypy
refuses there. Each builder here takes the keyword arguments of that `*ArgsDict` (imported for the type checker
only, so no plan loads `pulumi_gcp.storage`) and returns the block in wire form
exactly as `wire` does (camelCase, None fields left out), typed as the `*ArgsDict` its fields were checked
against: in wire form, to be read by the provider, not by code (see components/wire/cloud_run.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.storage import _inputs as storage


def lifecycle_rule(**fields: Unpack[storage.BucketLifecycleRuleArgsDict]) -> storage.BucketLifecycleRuleArgsDict:
    """`lifecycleRules[]`: one rule of a bucket's object lifecycle."""
    return cast("storage.BucketLifecycleRuleArgsDict", wire(**fields))


def lifecycle_action(
    **fields: Unpack[storage.BucketLifecycleRuleActionArgsDict],
) -> storage.BucketLifecycleRuleActionArgsDict:
    """`lifecycleRules[].action`: what the rule does (`Delete`)."""
    return cast("storage.BucketLifecycleRuleActionArgsDict", wire(**fields))


def lifecycle_condition(
    **fields: Unpack[storage.BucketLifecycleRuleConditionArgsDict],
) -> storage.BucketLifecycleRuleConditionArgsDict:
    """`lifecycleRules[].condition`: which objects the rule acts on."""
    return cast("storage.BucketLifecycleRuleConditionArgsDict", wire(**fields))
