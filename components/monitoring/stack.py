"""A stack's watch in Cloud Monitoring and Cloud Billing: its dashboard, alert policies, channels and budget.

Why one component: these are created from the stack's panel and alert lists (serving/) in one place,
so every stack gets the same set, and none of it holds a credential (channels the stack file names are
an email address or a Pub/Sub topic; PagerDuty and the like are referenced by their existing channel's
name, their keys never in a stack file). Alert conditions are PromQL with metric validation off: the
policies exist before the first scrape writes vLLM's metrics (Cloud Monitoring would otherwise refuse
a query over metrics it has never seen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi

from components.monitoring.dashboard import dashboard_json
from components.wire import billing, gcp, monitoring
from serving.alert_rules import AlertRule
from serving.dashboard_panels import Section
from serving.naming import StackNames, TypeToken

ChannelKind = Literal["email", "pubsub", "existing"]
_CHANNEL_TYPES = {"email": ("email", "email_address"), "pubsub": ("pubsub", "topic")}
EVALUATION_INTERVAL = "60s"


@dataclass(frozen=True)
class Channel:
    """Where notifications go: a channel this stack creates (email, pubsub) or an existing one's name."""

    kind: ChannelKind
    value: str
    slug: str


@dataclass(frozen=True)
class MonthlyBudget:
    """A calendar-month budget over the resources that carry ``label`` on one billing account."""

    billing_account: str
    amount: int
    thresholds: Sequence[float]
    label: tuple[str, str]

    def __post_init__(self) -> None:
        if self.amount <= 0 or not self.thresholds:
            raise ValueError("MonthlyBudget: a positive amount and at least one threshold")


@dataclass(frozen=True)
class StackWatchArgs:
    project: str
    stack: str
    sections: Sequence[Section] = ()
    alerts: Sequence[AlertRule] = ()
    channels: Sequence[Channel] = ()
    budget: MonthlyBudget | None = None
    intro: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        keys = [rule.key for rule in self.alerts]
        if len(keys) != len(set(keys)):
            raise ValueError(f"StackWatchArgs.alerts: alert keys must be unique, got {keys}")


class StackWatch(pulumi.ComponentResource):
    """Owns: the dashboard, one alert policy per rule, the channels it creates, the budget."""

    dashboard_id: pulumi.Output[str] | None
    alert_policies: list[str]

    def __init__(self, name: str, args: StackWatchArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.STACK_WATCH, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        channels = [self._channel(name, args, channel, child) for channel in args.channels]
        self.dashboard_id = None
        if args.sections:
            dashboard = gcp.Dashboard(
                f"{name}-dashboard",
                project=args.project,
                dashboard_json=dashboard_json(
                    display_name=StackNames(args.stack).display_name(),
                    intro=args.intro,
                    sections=args.sections,
                    labels=args.labels,
                ),
                opts=child,
            )
            self.dashboard_id = dashboard.id
        self.alert_policies = []
        for rule in args.alerts:
            gcp.AlertPolicy(
                f"{name}-alert-{rule.key}",
                project=args.project,
                display_name=StackNames(args.stack).display_title(rule.title),
                combiner="OR",
                severity=rule.severity,
                conditions=[
                    monitoring.alert_condition(
                        display_name=rule.title,
                        condition_prometheus_query_language=monitoring.prometheus_query_language(
                            query=rule.promql,
                            duration=f"{rule.for_seconds}s",
                            evaluation_interval=EVALUATION_INTERVAL,
                            disable_metric_validation=True,
                            labels={"severity": rule.severity.lower(), "stack": args.stack},
                        ),
                    )
                ],
                documentation=monitoring.documentation(
                    subject=f"gemma-serving {args.stack}: {rule.title}",
                    content=f"{rule.meaning}\n\nFirst command: `{rule.first_command}` (docs/operations.md, "
                    f'"{rule.key}").',
                    mime_type="text/markdown",
                ),
                notification_channels=channels,
                user_labels=dict(args.labels),
                opts=child,
            )
            self.alert_policies.append(rule.key)
        if args.budget is not None:
            self._budget(name, args, args.budget, channels, child)
        self.register_outputs({"alertPolicies": self.alert_policies})

    @staticmethod
    def _channel(name: str, args: StackWatchArgs, channel: Channel, child: pulumi.ResourceOptions) -> pulumi.Input[str]:
        if channel.kind == "existing":
            return channel.value
        channel_type, label = _CHANNEL_TYPES[channel.kind]
        created = gcp.NotificationChannel(
            f"{name}-channel-{channel.slug}",
            project=args.project,
            type=channel_type,
            display_name=StackNames(args.stack).display_title(channel.value),
            labels={label: channel.value},
            user_labels=dict(args.labels),
            opts=child,
        )
        return created.name

    @staticmethod
    def _budget(
        name: str,
        args: StackWatchArgs,
        budget: MonthlyBudget,
        channels: Sequence[pulumi.Input[str]],
        child: pulumi.ResourceOptions,
    ) -> None:
        key, value = budget.label
        gcp.Budget(
            f"{name}-budget",
            billing_account=budget.billing_account,
            display_name=StackNames(args.stack).display_name(),
            budget_filter=billing.budget_filter(labels={key: value}, calendar_period="MONTH"),
            amount=billing.budget_amount(specified_amount=billing.specified_amount(units=str(budget.amount))),
            threshold_rules=[
                billing.threshold_rule(threshold_percent=fraction, spend_basis="CURRENT_SPEND")
                for fraction in budget.thresholds
            ],
            all_updates_rule=billing.all_updates_rule(monitoring_notification_channels=list(channels))
            if channels
            else None,
            opts=child,
        )
