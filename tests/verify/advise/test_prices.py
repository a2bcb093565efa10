"""One price per shape: what `gemma-verify advise` charges for a shape is what the shipped stack's plan bills."""

from __future__ import annotations

import pytest

from preview.stack_file import available_stacks, read_stack_config
from serving.pricing import Billing, CloudRunBilling, GkeBilling, TpuBilling
from serving.shapes import deployed_size
from stacks.loading import load_stack
from tests.conftest import ROOT
from tests.serving.test_pricing import UNPRICED
from verify.advise.offers import Offer, offers

STACKS = available_stacks(ROOT)
# The advisor's provisioning names for each TPU tier a stack may bill.
TIER_TO_PROVISIONING = {"guaranteed": "on-demand", "spot": "spot", "flex-start": "flex-start"}


def _advised(billing: Billing) -> Offer:
    """The advisor's offer for the shape a stack bills (the bill names it), in its region, on its provisioning."""
    match billing:
        case CloudRunBilling():
            provisioning = "on-demand"
        case TpuBilling():
            provisioning = TIER_TO_PROVISIONING[billing.provisioning_model]
        case GkeBilling():
            provisioning = billing.provisioning_model
    shape = billing.shape
    platform = "tpu" if shape.platform == "tpu-vm" else shape.platform
    found, ruled_out = offers(platforms=(platform,), region=billing.region, provisioning=(provisioning,))
    matches = [offer for offer in found if offer.shape is shape]
    assert matches, f"advise offers no {shape.name} {provisioning} in {billing.region}: {ruled_out}"
    return matches[0]


@pytest.mark.parametrize("stack", STACKS)
def test_the_advisors_hourly_price_is_the_shipped_stacks(stack: str) -> None:
    """The matrix once said $1.05/h for an L4 while the shipped stack cost $1.42/h: a user comparing `advise` with
    `make preview` could not tell which to believe. For every shipped stack, the advisor prices its shape (instance
    size, TPU tier, GKE machine type and provisioning model, region) at exactly what the plan bills a unit."""
    billing = load_stack(read_stack_config(ROOT, stack).values, root=ROOT).settings.billing()
    offer = _advised(billing)
    planned = billing.hourly_price()
    if billing.shape.accelerator in UNPRICED:
        # No rate recorded yet: both say so, with the same reason, rather than one of them guessing.
        assert planned.usd_per_hour is None
        assert offer.price().usd_per_hour is None
        assert offer.price().missing == planned.missing
        return
    assert planned.usd_per_hour is not None, planned.missing
    assert offer.price().usd_per_hour == pytest.approx(planned.usd_per_hour)
    assert offer.price().sources == planned.sources
    if isinstance(billing, CloudRunBilling):
        size = deployed_size(billing.accelerator)
        assert (billing.cpu, billing.memory_gib) == (size.vcpu, size.memory_gib), "a shipped stack deploys the size"
    if isinstance(billing, GkeBilling) and billing.cluster_created:
        # The advisor's cluster is the one `advise --write` deploys: one zone, so one system node.
        one_zone = billing.model_copy(update={"system_nodes": 1}).fixed_price()
        fixed = offer.fixed_price()
        assert fixed is not None
        assert one_zone is not None
        assert fixed.usd_per_hour == pytest.approx(one_zone.usd_per_hour)
