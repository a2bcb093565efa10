"""A stack's `monitoring` block wired to components: the collector, the dashboard, the alerts and the budget.

Why its own module: both platforms watch the same way (serving.watch says what differs), so the Cloud Run
and TPU modules each add one call here instead of repeating the wiring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from components.monitoring.collection import SidecarCollection, SidecarCollectionArgs
from components.monitoring.sidecar import MetricsSidecar
from components.monitoring.stack import Channel, MonthlyBudget, StackWatch, StackWatchArgs
from deploy.context import StackContext
from serving.alert_rules import alert_rules
from serving.collectors import run_monitoring_config
from serving.dashboard_panels import dashboard_sections
from serving.naming import label_value
from serving.watch import Watched
from stacks.monitoring import NotificationChannelSettings, channel_slug
from stacks.settings import CloudRunStack, StackSettings


@dataclass(frozen=True)
class SidecarSupply:
    """What the Cloud Run service takes: the sidecar (None when the stack collects nothing) and what it waits for."""

    sidecar: MetricsSidecar | None = None
    ready: list[pulumi.Resource] = field(default_factory=list)


def sidecar_supply(
    settings: CloudRunStack, context: StackContext, writer: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> SidecarSupply:
    if not settings.monitoring.enabled:
        return SidecarSupply()
    collection = SidecarCollection(
        context.names.metrics,
        SidecarCollectionArgs(
            project=context.project,
            writer=writer,
            secret_id=context.names.sidecar_config_secret,
            config=run_monitoring_config(port=settings.port),
            location=settings.region,
            labels=dict(context.labels),
        ),
        opts,
    )
    return SidecarSupply(sidecar=collection.sidecar, ready=collection.ready)


def watch_stack(
    settings: StackSettings, context: StackContext, watched: Watched, opts: pulumi.ResourceOptions
) -> StackWatch | None:
    """The dashboard and alerts (unless monitoring is off) and the budget (when a billing account is named)."""
    monitoring = settings.monitoring
    budget = monitoring.budget
    if not monitoring.enabled and not budget.enabled:
        return None
    thresholds = monitoring.thresholds.alert_thresholds()
    enabled = monitoring.enabled
    return StackWatch(
        context.names.watch,
        StackWatchArgs(
            project=context.project,
            stack=context.stack,
            sections=dashboard_sections(watched, thresholds, spec_decode=settings.vllm.speculative is not None)
            if enabled
            else (),
            alerts=alert_rules(watched, thresholds, stack=context.stack) if enabled else (),
            channels=[_channel(channel) for channel in monitoring.notification_channels],
            budget=MonthlyBudget(
                billing_account=budget.billing_account,
                amount=budget.amount or 0,
                thresholds=budget.thresholds,
                label=("stack", label_value(context.stack)),
            )
            if budget.billing_account
            else None,
            intro=(
                f"vLLM serving `{settings.model.served_name}` on {settings.accelerator} ({watched.name}). "
                f'vLLM metrics: Managed Service for Prometheus, `namespace="{watched.name}"`. What each alert means '
                "and the first command to run: docs/operations.md."
            ),
            labels=dict(context.labels),
        ),
        opts,
    )


def _channel(channel: NotificationChannelSettings) -> Channel:
    slug = channel_slug(channel)
    if channel.email:
        return Channel("email", channel.email, slug)
    if channel.pubsub_topic:
        return Channel("pubsub", channel.pubsub_topic, slug)
    return Channel("existing", channel.existing or "", slug)
