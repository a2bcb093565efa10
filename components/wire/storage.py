"""Typed wire builders for Cloud Storage blocks: pulumi-gcp's `storage` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
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
