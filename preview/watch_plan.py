"""The plan's "Watching the stack" section: the collector, the dashboard, each alert with its condition, the budget.

Why a section: the resource list names the alert policies, but a reviewer needs their thresholds and who
they notify to judge them, and the collector hides inside the service's template or the TPU startup script.
"""

from __future__ import annotations

from preview.capture import Capture
from preview.monitoring_notes import ALERT_POLICY, BUDGET, DASHBOARD, resource_inputs
from preview.supply_plan import SERVICE
from preview.tpu_plan import script_value, startup_scripts


def _collectors(capture: Capture) -> list[str]:
    lines = []
    for service in capture.of_type(SERVICE):
        for container in (resource_inputs(service).get("template") or {}).get("containers") or []:
            if container.get("dependsOns"):
                limits = (container.get("resources") or {}).get("limits") or {}
                after = ", ".join(container["dependsOns"])
                lines.append(
                    f"sidecar {container.get('name')} <- {container.get('image')} ({limits.get('cpu')} CPU / "
                    f"{limits.get('memory')} of the instance, no GPU; starts after {after})"
                )
    for node, script in startup_scripts(capture):
        image = script_value(script, "COLLECTOR_IMAGE")
        if image:
            lines.append(f"node {node}: container {script_value(script, 'COLLECTOR_CONTAINER')} <- {image}")
    return lines


def watch_section(capture: Capture) -> list[str]:
    """Empty when the stack watches nothing (monitoring off and no budget)."""
    policies = sorted(capture.of_type(ALERT_POLICY), key=lambda r: r.name)
    budgets = capture.of_type(BUDGET)
    if not (policies or budgets or capture.of_type(DASHBOARD)):
        return []
    lines = ["Watching the stack (docs/operations.md, 'Watching a stack'):"]
    lines += [f"  collector:  {line}" for line in _collectors(capture)] or ["  collector:  none"]
    for dashboard in capture.of_type(DASHBOARD):
        lines.append(f"  dashboard:  {dashboard.name}")
    for policy in policies:
        inputs = resource_inputs(policy)
        condition = (inputs.get("conditions") or [{}])[0].get("conditionPrometheusQueryLanguage") or {}
        channels = len(inputs.get("notificationChannels") or [])
        # Lower case: the plan keeps upper-case WARNING for its own warnings.
        severity = str(inputs.get("severity")).lower()
        lines.append(
            f"  alert:      [{severity}] {inputs.get('displayName')} (for {condition.get('duration')}; "
            f"{channels} channel(s))"
        )
    for budget in budgets:
        inputs = resource_inputs(budget)
        units = ((inputs.get("amount") or {}).get("specifiedAmount") or {}).get("units")
        rules = [rule.get("thresholdPercent") for rule in inputs.get("thresholdRules") or []]
        lines.append(f"  budget:     {units} a month on {inputs.get('billingAccount')}, notifying at {rules}")
    return [*lines, ""]
