"""The stack file's `monitoring` block: thresholds, channels and budget fail with the key and what is allowed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from serving.alert_rules import AlertThresholds
from stacks.monitoring import BUDGET_API, MONITORING_API, MonitoringSettings


def settings(block: dict[str, object]) -> MonitoringSettings:
    return MonitoringSettings.model_validate(block)


def test_defaults_are_vllms_dashboard_values_and_tell_nobody() -> None:
    """With no block a stack collects, charts and alerts with vLLM's thresholds, names no channel, has no budget."""
    monitoring = MonitoringSettings()
    assert monitoring.enabled
    assert monitoring.thresholds.alert_thresholds() == AlertThresholds()
    assert monitoring.notification_channels == ()
    assert not monitoring.budget.enabled
    assert monitoring.apis == (MONITORING_API,)


def test_an_slo_threshold_must_be_a_bucket_of_vllms_histogram() -> None:
    """Attainment is read from a histogram bucket: 0.3 s is not a TTFT bucket of vLLM 0.32, so no alert could
    compute it; the message lists the bounds that work."""
    with pytest.raises(
        ValidationError, match=r"thresholds.ttftSeconds: 0.3 is not a bucket bound .* allowed: .*0.25, 0.5"
    ):
        settings({"thresholds": {"ttftSeconds": 0.3}})
    assert settings({"thresholds": {"ttftSeconds": 2.5, "tpotSeconds": 0.05}}).thresholds.ttft_seconds == 2.5


def test_a_warning_must_come_before_its_critical() -> None:
    """Swapped thresholds would page before they warn."""
    with pytest.raises(ValidationError, match=r"kvCacheWarning \(0.99\) must be below kvCacheCritical \(0.98\)"):
        settings({"thresholds": {"kvCacheWarning": 0.99}})
    with pytest.raises(ValidationError, match=r"attainmentWarning \(0.8\) must be above attainmentCritical"):
        settings({"thresholds": {"attainmentWarning": 0.8}})


def test_a_misspelt_key_is_named() -> None:
    """A typo is an error naming the key, never a silently ignored threshold."""
    with pytest.raises(ValidationError, match="kvCacheWarnin"):
        settings({"thresholds": {"kvCacheWarnin": 0.8}})


def test_each_channel_names_exactly_one_destination() -> None:
    """A channel is an email, a Pub/Sub topic or an existing channel's name; keys of PagerDuty and the like
    stay in the channel made elsewhere."""
    with pytest.raises(ValidationError, match="exactly one of email, pubsubTopic"):
        settings({"notificationChannels": [{"email": "a@example.com", "pubsubTopic": "projects/p-1234/topics/t12"}]})
    with pytest.raises(ValidationError, match="existing"):
        settings({"notificationChannels": [{"existing": "pagerduty-service-key-abc"}]})
    ok = settings({"notificationChannels": [{"existing": "projects/my-project/notificationChannels/42"}]})
    assert ok.notification_channels[0].existing


def test_a_budget_needs_an_amount_and_adds_its_api() -> None:
    """A billing account without an amount cannot make a budget; with both the Billing Budget API is enabled."""
    with pytest.raises(ValidationError, match=r"monitoring\.budget\.amount"):
        settings({"budget": {"billingAccount": "012345-6789AB-CDEF01"}})
    with pytest.raises(ValidationError, match="billingAccount"):
        settings({"budget": {"billingAccount": "not-an-account", "amount": 10}})
    budget = settings({"budget": {"billingAccount": "012345-6789AB-CDEF01", "amount": 10}})
    assert budget.apis == (MONITORING_API, BUDGET_API)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("maxQueueSeconds", float("inf")),
        ("maxQueueSeconds", float("nan")),
        ("maxQueueSeconds", -1.0),
        ("maxQueueSeconds", 1e9),
        ("ttftSeconds", float("inf")),
        ("ttftSeconds", float("nan")),
        ("tpotSeconds", -0.1),
        ("kvCacheWarning", float("nan")),
        ("errorRatioCritical", float("inf")),
        ("maxWaitingRequests", -1),
        ("maxWaitingRequests", 10**12),
    ],
)
def test_a_threshold_that_is_not_finite_or_not_sane_is_refused_naming_the_key(key: str, value: float) -> None:
    """Red team: `maxQueueSeconds: .inf` was accepted and deployed an alert that can never fire (nobody paged
    however long requests queue). Every threshold is finite and within a range an alert can reach."""
    with pytest.raises(ValidationError, match=key):
        settings({"thresholds": {key: value}})
