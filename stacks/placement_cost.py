"""What a TPU stack's node bills when it could land in any of its placements: the worst case of the list.

Why the worst case: `pulumi up` takes the first placement Google grants, which the plan cannot know, so
the price it shows (and the `billing` output verify bench prices with) is the dearest placement's, never a
cheaper one that may not come. A placement whose rate the price book lacks counts as the worst (its price
is reported missing, never guessed).
"""

from __future__ import annotations

from serving.gcp_names import region_of
from serving.pricing import TpuBilling, hourly_price
from stacks.tpu import TpuPlacement, TpuSettings


def placement_billing(tpu: TpuSettings, placement: TpuPlacement) -> TpuBilling:
    """What the node bills in one placement: its slice at that tier's rate in that zone's region."""
    return TpuBilling(
        accelerator_type=tpu.accelerator_type,
        chips=tpu.chips,
        provisioning_model=placement.provisioning.model.value,
        region=region_of(placement.zone),
        max_run_seconds=placement.provisioning.max_run_duration,
    )


def worst_case_billing(tpu: TpuSettings) -> TpuBilling:
    """The dearest placement's bill (an unpriced one first; the first listed among equals)."""
    bills = [placement_billing(tpu, placement) for placement in tpu.placement_list]

    def cost(bill: TpuBilling) -> tuple[bool, float, int]:
        usd = hourly_price(bill).usd_per_hour
        return (usd is None, usd or 0.0, bill.max_run_seconds or 0)

    worst = bills[0]
    for bill in bills[1:]:
        if cost(bill) > cost(worst):
            worst = bill
    return worst
