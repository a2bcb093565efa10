"""Typed wire builders for Cloud Billing blocks: pulumi-gcp's `billing` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.billing import _inputs as billing


def budget_filter(**fields: Unpack[billing.BudgetBudgetFilterArgsDict]) -> billing.BudgetBudgetFilterArgsDict:
    """`budgetFilter`: which costs a budget counts."""
    return cast("billing.BudgetBudgetFilterArgsDict", wire(**fields))


def budget_amount(**fields: Unpack[billing.BudgetAmountArgsDict]) -> billing.BudgetAmountArgsDict:
    """`amount`: the budget's amount."""
    return cast("billing.BudgetAmountArgsDict", wire(**fields))


def specified_amount(
    **fields: Unpack[billing.BudgetAmountSpecifiedAmountArgsDict],
) -> billing.BudgetAmountSpecifiedAmountArgsDict:
    """`amount.specifiedAmount`: a fixed amount (in the billing account's currency)."""
    return cast("billing.BudgetAmountSpecifiedAmountArgsDict", wire(**fields))


def threshold_rule(**fields: Unpack[billing.BudgetThresholdRuleArgsDict]) -> billing.BudgetThresholdRuleArgsDict:
    """`thresholdRules[]`: a fraction of the amount that notifies."""
    return cast("billing.BudgetThresholdRuleArgsDict", wire(**fields))


def all_updates_rule(**fields: Unpack[billing.BudgetAllUpdatesRuleArgsDict]) -> billing.BudgetAllUpdatesRuleArgsDict:
    """`allUpdatesRule`: where a budget's notifications go."""
    return cast("billing.BudgetAllUpdatesRuleArgsDict", wire(**fields))
