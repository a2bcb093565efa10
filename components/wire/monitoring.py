"""Typed wire builders for Cloud Monitoring blocks: pulumi-gcp's own input types, at no import cost.

Why: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested block is
typed as pulumi-gcp's `*ArgsDict` for it; a block built with the untyped `wire` is a `dict[str, Any]` that mypy
refuses there. Each builder here takes the keyword arguments of that `*ArgsDict` (imported for the type checker
only, so no plan loads `pulumi_gcp.monitoring`) and returns the block in wire form
exactly as `wire` does (camelCase, None fields left out), typed as the `*ArgsDict` its fields were checked
against: in wire form, to be read by the provider, not by code (see components/wire/cloud_run.py).
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
