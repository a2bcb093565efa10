"""The stack file's `monitoring` block: collection, the dashboard, the alerts' thresholds and channels, a budget.

Why in the stack file: the thresholds that page someone are a property of the stack (its SLO, its
bench sweep), so they live beside its vLLM settings; defaults are vLLM's own dashboard values
(serving/alert_rules.py says where each comes from). Nobody is notified unless the stack names a
channel, and a budget exists only when the stack names a billing account (the plan's notes say both).

    gemma-serving:monitoring:
      thresholds: {ttftSeconds: 1.0, tpotSeconds: 0.1, maxQueueSeconds: 1.0}
      notificationChannels:
        - email: oncall@example.com
        - pubsubTopic: projects/my-project/topics/gemma-alerts
        - existing: projects/my-project/notificationChannels/123   # PagerDuty, Slack... made in the console
      budget: {billingAccount: 012345-6789AB-CDEF01, amount: 2500, thresholds: [0.5, 0.9, 1.0]}
"""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import Field, field_validator, model_validator

from serving.alert_rules import TPOT_HISTOGRAM, TTFT_HISTOGRAM, AlertThresholds
from serving.vllm_metrics import recorded_metrics
from stacks.base import SettingsModel
from stacks.bounds import MAX_BUDGET_UNITS

_DEFAULTS = AlertThresholds()
# Formats from the Cloud Billing and Monitoring APIs (billingAccounts/{id}: 0X0X0X-0X0X0X-0X0X0X;
# notificationChannels and Pub/Sub topic resource names).
_BILLING_ACCOUNT = r"^[0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6}$"
_TOPIC = r"^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/topics/[A-Za-z][-A-Za-z0-9._~%+]{2,254}$"
_CHANNEL = r"^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/notificationChannels/[0-9]+$"
_EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
# A share of something (0 excluded, 1 included).
Fraction = Annotated[float, Field(gt=0, le=1)]
# The widest queue-time and waiting-requests thresholds taken: above them the alert could never fire in practice
# (vLLM's own request timeout and a server's request capacity are far below), so a larger value is a typo.
MAX_QUEUE_SECONDS = 3600.0
MAX_WAITING_REQUESTS = 100_000
# The APIs monitoring adds: Cloud Monitoring (dashboard, alerts, channels, metric writes) and, with a
# budget, the Billing Budget API.
MONITORING_API = "monitoring.googleapis.com"
BUDGET_API = "billingbudgets.googleapis.com"


class ThresholdSettings(SettingsModel):
    """What the alerts compare with (serving.alert_rules.AlertThresholds); defaults are vLLM's."""

    kv_cache_warning: Fraction = _DEFAULTS.kv_cache_warning
    kv_cache_critical: Fraction = _DEFAULTS.kv_cache_critical
    error_ratio_warning: Fraction = _DEFAULTS.error_ratio_warning
    error_ratio_critical: Fraction = _DEFAULTS.error_ratio_critical
    # SLO thresholds: bucket bounds of vLLM's TTFT and TPOT histograms (attainment is read from a bucket).
    ttft_seconds: float = Field(default=_DEFAULTS.ttft_seconds, gt=0)
    tpot_seconds: float = Field(default=_DEFAULTS.tpot_seconds, gt=0)
    attainment_warning: Fraction = _DEFAULTS.attainment_warning
    attainment_critical: Fraction = _DEFAULTS.attainment_critical
    # Finite and at most an hour: `.inf` was accepted and made an alert that can never fire.
    max_queue_seconds: float = Field(
        default=_DEFAULTS.max_queue_seconds, gt=0, le=MAX_QUEUE_SECONDS, allow_inf_nan=False
    )
    max_waiting_requests: int | None = Field(default=_DEFAULTS.max_waiting_requests, ge=0, le=MAX_WAITING_REQUESTS)
    for_seconds: int = Field(default=_DEFAULTS.for_seconds, ge=0, le=86400)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems = [
            _order("kvCache", self.kv_cache_warning, self.kv_cache_critical, rising=True),
            _order("errorRatio", self.error_ratio_warning, self.error_ratio_critical, rising=True),
            _order("attainment", self.attainment_warning, self.attainment_critical, rising=False),
            _bucket("ttftSeconds", TTFT_HISTOGRAM, self.ttft_seconds),
            _bucket("tpotSeconds", TPOT_HISTOGRAM, self.tpot_seconds),
        ]
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))
        return self

    def alert_thresholds(self) -> AlertThresholds:
        return AlertThresholds(**self.model_dump())


def _order(key: str, warning: float, critical: float, *, rising: bool) -> str | None:
    if (warning < critical) if rising else (warning > critical):
        return None
    relation = "below" if rising else "above"
    return (
        f"monitoring.thresholds.{key}Warning ({warning:g}) must be {relation} {key}Critical ({critical:g}): the "
        "warning comes first"
    )


def _bucket(key: str, histogram: str, value: float) -> str | None:
    bounds = recorded_metrics().buckets(histogram)
    if value in bounds:
        return None
    allowed = ", ".join(f"{bound:g}" for bound in bounds)
    return (
        f"monitoring.thresholds.{key}: {value:g} is not a bucket bound of vLLM {recorded_metrics().release}'s "
        f"{histogram} histogram, so its attainment cannot be read; allowed: {allowed}"
    )


class NotificationChannelSettings(SettingsModel):
    """Who is told when an alert fires or the budget is crossed: exactly one of the three."""

    email: str | None = Field(default=None, pattern=_EMAIL)
    pubsub_topic: str | None = Field(default=None, pattern=_TOPIC)
    # A channel made elsewhere (PagerDuty, Slack, SMS): its key stays out of the stack file.
    existing: str | None = Field(default=None, pattern=_CHANNEL)

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [value for value in (self.email, self.pubsub_topic, self.existing) if value]
        if len(given) != 1:
            raise ValueError(
                "monitoring.notificationChannels: each entry names exactly one of email, pubsubTopic "
                "(projects/<p>/topics/<t>) or existing (projects/<p>/notificationChannels/<id>)"
            )
        return self


class BudgetSettings(SettingsModel):
    """A monthly Cloud Billing budget over the stack's labelled resources; off without a billing account."""

    billing_account: str | None = Field(default=None, pattern=_BILLING_ACCOUNT)
    # Whole units of the billing account's currency per calendar month (the API's Money.units, an int64).
    amount: int | None = Field(default=None, gt=0, le=MAX_BUDGET_UNITS)
    # Fractions of the amount at which the budget notifies (Cloud Billing allows above 1, e.g. 1.2).
    thresholds: tuple[float, ...] = (0.5, 0.9, 1.0)

    @field_validator("amount", mode="before")
    @classmethod
    def _int64_units(cls, value: object) -> object:
        """`amount: 1e30` previewed and would fail at `pulumi up`: the Budget API holds an int64 of units."""
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and not -MAX_BUDGET_UNITS <= value <= MAX_BUDGET_UNITS
        ):
            raise ValueError(
                f"{value!r} is more than the Budget API holds (Money.units, an int64); allowed: a whole number "
                f"of currency units from 1 to {MAX_BUDGET_UNITS}"
            )
        return value

    @model_validator(mode="after")
    def _usable(self) -> Self:
        if self.billing_account and self.amount is None:
            raise ValueError("monitoring.budget.amount: a budget needs a monthly amount (whole currency units)")
        if not self.thresholds or any(not 0 < value <= 10 for value in self.thresholds):
            raise ValueError("monitoring.budget.thresholds: one or more fractions of the amount, each in (0, 10]")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.billing_account)


class MonitoringSettings(SettingsModel):
    """Collection, dashboard and alerts (on unless `enabled: false`), and the optional budget."""

    enabled: bool = True
    thresholds: ThresholdSettings = ThresholdSettings()
    notification_channels: tuple[NotificationChannelSettings, ...] = ()
    budget: BudgetSettings = BudgetSettings()

    @property
    def apis(self) -> tuple[str, ...]:
        return (*([MONITORING_API] if self.enabled else []), *([BUDGET_API] if self.budget.enabled else []))


def channel_slug(channel: NotificationChannelSettings) -> str:
    """A short, stable child-name fragment for a channel the stack creates."""
    value = channel.email or channel.pubsub_topic or channel.existing or ""
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:40]
