"""`verify status` lists every queued resource of a TPU stack that no state tracks.

The queued-resource provider keeps one request at a time; a request it lost track of (its create failed
after Google had carried out the POST, or an older version moved on and left it) bills once it turns ACTIVE,
and `pulumi destroy` never deletes it. Status looks in every placement's zone and names each extra request
with the command that deletes it. Bodies: TPU v2 `projects.locations.queuedResources.get` (`QueuedResource`,
`QueuedResourceState` in tpu.v2.json revision 20261001; tests/verify/ops/fixtures/README.md).
"""

from __future__ import annotations

from tests.verify.ops.google_fake import FakeGoogle, fixture
from tests.verify.ops.scenarios import PROJECT
from tests.verify.ops.test_tpu_placement_status import FALLBACK, ID, IN_EU, IN_US, NODE_EU, status
from verify.ops.status import RolloutState


def _in(path: str, body_fixture: str) -> dict[str, object]:
    return dict(fixture(body_fixture), name=path.removeprefix("/tpu/v2/"))


def test_an_orphan_in_the_first_zone_beside_the_serving_node_is_listed(fake: FakeGoogle) -> None:
    """Placement 2 serves (the state's node); placement 1 still holds a request nothing tracks: it is named."""
    fake.route("GET", IN_US, _in(IN_US, "tpu_queued_waiting.json"))
    fake.route("GET", IN_EU, _in(IN_EU, "tpu_queued_active.json"))
    fake.route("GET", NODE_EU, fixture("tpu_node_ready.json"))
    report = status(fake, FALLBACK)
    assert report.tpu is not None
    orphan = f"projects/{PROJECT}/locations/us-east5-a/queuedResources/{ID}"
    assert report.tpu.untracked == [orphan]
    assert (
        f"1 more request(s) of this stack that no state tracks (they can bill): {orphan} (WAITING_FOR_RESOURCES)"
        in (report.summary)
    )
    assert f"queued-resources delete {ID} --zone us-east5-a --project {PROJECT} --force" in (report.fix or "")
    # The serving node is still the one reported.
    assert report.tpu.placement is not None
    assert report.tpu.placement.zone == "europe-west4-a"


def test_two_waiting_requests_report_the_first_and_list_the_second(fake: FakeGoogle) -> None:
    fake.route("GET", IN_US, _in(IN_US, "tpu_queued_waiting.json"))
    fake.route("GET", IN_EU, _in(IN_EU, "tpu_queued_placement2_waiting.json"))
    report = status(fake, FALLBACK)
    assert report.state is RolloutState.IN_PROGRESS
    assert report.tpu is not None
    assert report.tpu.untracked == [f"projects/{PROJECT}/locations/europe-west4-a/queuedResources/{ID}"]


def test_one_request_lists_nothing(fake: FakeGoogle) -> None:
    fake.route("GET", IN_EU, _in(IN_EU, "tpu_queued_placement2_waiting.json"))
    report = status(fake, FALLBACK)
    assert report.tpu is not None
    assert report.tpu.untracked == []
    assert "no state tracks" not in report.summary
