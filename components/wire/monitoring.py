"""Typed wire builders for Cloud Monitoring blocks: pulumi-gcp's `monitoring` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.monitoring import _inputs as monitoring


def alert_condition(
    **fields: Unpack[monitoring.AlertPolicyConditionArgsDict],
) -> monitoring.AlertPolicyConditionArgsDict:
    """`conditions[]`: one condition of an alert policy."""
    return cast("monitoring.AlertPolicyConditionArgsDict", wire(**fields))


def prometheus_query_language(
    **fields: Unpack[monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgsDict],
) -> monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgsDict:
    """`conditions[].conditionPrometheusQueryLanguage`: a PromQL condition."""
    return cast("monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgsDict", wire(**fields))


def documentation(
    **fields: Unpack[monitoring.AlertPolicyDocumentationArgsDict],
) -> monitoring.AlertPolicyDocumentationArgsDict:
    """`documentation`: what the notification of an alert says."""
    return cast("monitoring.AlertPolicyDocumentationArgsDict", wire(**fields))
