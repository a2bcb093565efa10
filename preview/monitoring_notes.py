"""The plan's notes about watching the stack: who the alerts tell, and what a budget needs from the deployer.

Why notes: an alert policy without a notification channel fires into a console page nobody watches, and
a budget is created on a billing account the deployer may have no right to touch; both are decided in
the stack file (`monitoring.notificationChannels`, `monitoring.budget`), so the plan says so up front.
"""

from __future__ import annotations

from typing import Any

from preview.capture import Capture, CapturedResource
from preview.render import clean

ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
BUDGET = "gcp:billing/budget:Budget"
CHANNEL = "gcp:monitoring/notificationChannel:NotificationChannel"


def resource_inputs(resource: CapturedResource) -> dict[str, Any]:
    """A captured resource's inputs as the plan shows them (secrets masked); the watch section reads them too."""
    return dict(clean(resource.inputs))


def monitoring_notes(capture: Capture) -> list[str]:
    """What watching this stack needs from the deployer, or that nothing watches it."""
    policies = capture.of_type(ALERT_POLICY)
    notes: list[str] = []
    if not policies and not capture.of_type(DASHBOARD):
        notes.append(
            "monitoring: off (monitoring.enabled is false): no metrics are collected and nothing alerts on this "
            "stack (docs/operations.md, 'What is collected')."
        )
    elif not any(resource_inputs(policy).get("notificationChannels") for policy in policies):
        notes.append(
            f"alerts: {len(policies)} alert policies and a dashboard watch the stack, but no notification channel "
            "is named (monitoring.notificationChannels is empty): alerts show in Cloud Monitoring and tell nobody. "
            "Name an email, a Pub/Sub topic or an existing channel (PagerDuty, Slack) there."
        )
    if any(resource_inputs(channel).get("type") == "pubsub" for channel in capture.of_type(CHANNEL)):
        notes.append(
            "alerts: a Pub/Sub channel publishes as the project's Cloud Monitoring service agent "
            "(service-<project number>@gcp-sa-monitoring-notification.iam.gserviceaccount.com): grant it "
            "roles/pubsub.publisher on the topic, or its notifications are dropped."
        )
    budgets = capture.of_type(BUDGET)
    if budgets:
        account = resource_inputs(budgets[0]).get("billingAccount")
        notes.append(
            f"budget: `pulumi up` creates a budget on billing account {account}: the deployer needs "
            "roles/billing.costsManager (or billing.admin) on it, and with user credentials (gcloud auth "
            "application-default login) the provider needs a quota project: `pulumi config set gcp:billingProject "
            "<project>` and `pulumi config set gcp:userProjectOverride true`, with the Billing Budget API enabled "
            "there, or the budget fails with 403. It counts only resources labelled with this stack."
        )
    else:
        notes.append(
            "budget: none (monitoring.budget.billingAccount is unset): nothing warns when this stack's spend "
            "passes an amount; set billingAccount and amount to get one."
        )
    return notes
