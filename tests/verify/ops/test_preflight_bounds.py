"""`verify preflight` on a TPU stack stays bounded whatever the quota answer names.

Red team: a hostile (or broken) Cloud Quotas answer naming 400 zones made preflight ask the TPU API and
Monitoring about each: 1,218 calls. Zones are now taken from the quota answer only in the v6e regions the
table and the stack's placements name, at most MAX_ZONES in all; the others are named in the capacity's
note, and the calls stay a small multiple of the zones asked.
"""

from __future__ import annotations

from tests.verify.ops.google_fake import FakeGoogle
from tests.verify.ops.test_tpu_availability import capacity, preflight, tpu_quota
from verify.ops.tpu_availability import MAX_ZONES


def hostile_quota(zones: list[str]) -> dict[str, object]:
    body = tpu_quota()
    preemptible = body["quotaInfos"][0]
    for zone in zones:
        preemptible["dimensionsInfos"].append(
            {"dimensions": {"zone": zone}, "details": {"value": "8"}, "applicableLocations": [zone]}
        )
    return body


def test_a_quota_answer_naming_400_zones_does_not_make_400_zones_of_calls(fake: FakeGoogle) -> None:
    zones = [f"xx-fake{i}-a" for i in range(380)] + [f"us-east5-{letter}" for letter in "cdefghijklmnopqrst"]
    report = preflight(fake, "tpu-v6e", quota=hostile_quota(zones))
    found = capacity(report)
    asked = {row.zone for row in found.rows}
    assert len(asked) <= MAX_ZONES
    assert not any(zone.startswith("xx-") for zone in asked)
    assert "were not asked about" in found.source_note
    # Each zone asked costs its two offer lists and a usage read per quota: far from 1,218.
    assert len(fake.seen) <= 4 * MAX_ZONES + 10


def test_a_zone_in_a_known_region_named_by_the_quota_is_still_asked(fake: FakeGoogle) -> None:
    """The bound must not drop the real case: a new v6e zone in a region the table knows."""
    report = preflight(fake, "tpu-v6e", quota=hostile_quota(["us-east5-c"]))
    assert "us-east5-c" in {row.zone for row in capacity(report).rows}
