"""tpu.placements in the stack file: an ordered fallback that stays optional, and its mistakes named."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.loading import settings_from_config
from stacks.settings import TpuStack
from tests.stacks.test_settings import problems_of
from tests.stacks.test_tpu_settings import tpu_config

FLEX = {"zone": "us-east5-a", "provisioning": {"model": "flex-start", "maxRunDuration": "4h"}}
SPOT_EU = {"zone": "europe-west4-a", "provisioning": "spot"}


def tpu_stack(**changes: Any) -> TpuStack:
    settings = settings_from_config(tpu_config(**changes))
    assert isinstance(settings, TpuStack)
    return settings


def test_without_placements_the_stack_zone_is_the_only_one() -> None:
    """A single-zone stack file works unchanged: one placement, its zone and tier, no warning."""
    settings = tpu_stack()
    [only] = settings.tpu.placement_list
    assert (only.zone, only.provisioning.model.value) == ("us-east5-a", "flex-start")
    assert settings.quota_warnings() == []


def test_placements_set_the_zone_and_tier_from_the_first() -> None:
    """tpu.zone and tpu.provisioning may be left out: the first placement is both."""
    settings = tpu_stack(tpu__zone=None, tpu__provisioning=None, tpu__placements=[FLEX, SPOT_EU])
    assert settings.tpu.zone == "us-east5-a"
    assert settings.tpu.provisioning.max_run_duration == 4 * 3600
    assert [p.label for p in settings.tpu.placement_list] == ["us-east5-a flex-start", "europe-west4-a spot"]


def test_billing_is_the_dearest_placement() -> None:
    """The plan prices the worst case: spot in europe-west4 ($1.78/chip-h) over flex-start in us-east5 ($1.35)."""
    bill = tpu_stack(tpu__placements=[FLEX, SPOT_EU]).billing()
    assert (bill.provisioning_model, bill.region, bill.max_run_seconds) == ("spot", "europe-west4", None)


def test_flex_start_outside_the_table_is_a_warning_not_a_refusal() -> None:
    """The hand-made deployment ran flex-start in europe-west4-a: it is tried, and the plan warns."""
    settings = tpu_stack(tpu__placements=[FLEX, {"zone": "europe-west4-a", "provisioning": "flex-start"}])
    [warning] = settings.quota_warnings()
    assert warning.startswith("tpu.placements[1]: flex-start in europe-west4-a is not in Google's published")
    assert "verify preflight" in warning
    single = tpu_stack(tpu__zone="us-east5-b", region="us-east5")
    assert single.quota_warnings()[0].startswith("tpu.zone: flex-start in us-east5-b")


@pytest.mark.parametrize(
    ("placements", "expected"),
    [
        ([SPOT_EU, FLEX], "tpu.placements[0] (europe-west4-a spot) must be tpu.zone with tpu.provisioning"),
        ([FLEX, FLEX], "tpu.placements[1]: us-east5-a flex-start is listed twice"),
        ([FLEX, {"zone": "us-west1-a", "provisioning": "spot"}], "tpu.placements[].zone 'us-west1-a' has no TPU v6e"),
        ([FLEX, {"zone": "us-east1-d", "provisioning": "on-demand"}], "provisioning.model"),
        ([FLEX, {"zone": "us-east1-d", "provisioning": {"model": "spot", "maxRunDuration": "4h"}}], "flex-start"),
        ([FLEX] + [{"zone": "us-east1-d", "provisioning": "spot"}] * 6, "at most 6"),
    ],
)
def test_placement_mistakes_name_the_entry(placements: list[dict[str, Any]], expected: str) -> None:
    """A wrong list fails before anything queues, naming the entry and what is allowed."""
    assert expected in problems_of(tpu_config(tpu__placements=placements))


def test_a_subnetwork_keeps_the_placements_in_its_region() -> None:
    """A subnetwork is regional: a placement in Europe could not attach to a us-east5 subnetwork."""
    problems = problems_of(tpu_config(tpu__subnetwork="tpu-subnet", tpu__placements=[FLEX, SPOT_EU]))
    assert "tpu.placements[1]: europe-west4-a is outside us-east5, the region of tpu.subnetwork" in problems
