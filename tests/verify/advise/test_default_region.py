"""`gemma-verify advise` without --region: each shape is offered in a region where Google offers it."""

from __future__ import annotations

from serving.gcp_names import region_of
from serving.shapes import machine_family, shape
from verify.advise.offers import DEFAULT_GKE_GPU_REGION, DEFAULT_TPU_REGION, advised_shapes, default_region, offers


def test_a_shape_offered_only_outside_the_default_region_is_still_offered() -> None:
    """With one fixed default region (us-east5 for TPU, us-central1 for GKE GPUs), `advise` ruled out TPU7x
    (offered in us-central1 only) and the H200 (us-south1) as "no zone of us-east5 offers ...": a user who named no
    region never saw them ranked. Every GKE machine type is now offered, without --region, on each provisioning
    model its series sells, in a region of its own zones."""
    found, ruled_out = offers(platforms=("gke",), region=None, provisioning=("on-demand", "spot", "flex-start"))
    assert not [why for _, why in ruled_out if "no zone of" in why]
    for entry in advised_shapes():
        if entry.platform != "gke":
            continue
        zones = machine_family(shape(entry.name)).where.value
        mine = [offer for offer in found if offer.shape.name == entry.name]
        assert {offer.provisioning for offer in mine} == set(machine_family(shape(entry.name)).provisioning)
        assert all(offer.zone in zones and offer.region == region_of(offer.zone) for offer in mine)


def test_a_shape_offered_in_the_old_default_region_keeps_it() -> None:
    """Answers advise gave before must not move: a shape offered in the old default region is still offered there
    (v6e slices and ct6e pools in us-east5, G2, G4, A3 High and A4 in us-central1)."""
    found, _ = offers(platforms=(), region=None, provisioning=("spot", "flex-start"))
    regions = {offer.shape.name: offer.region for offer in found if offer.platform in {"tpu", "gke"}}
    assert regions["v6e-1"] == regions["ct6e-standard-1t"] == DEFAULT_TPU_REGION
    assert regions["g2-standard-12"] == regions["a3-highgpu-1g"] == regions["a4-highgpu-8g"] == DEFAULT_GKE_GPU_REGION


def test_the_default_region_prefers_the_old_default_then_the_first_zone() -> None:
    """The rule itself, on plain zone lists: the preferred region where a zone is there, else the first zone's."""
    assert default_region(("us-central1-b", "us-east5-a"), "us-east5") == "us-east5"
    assert default_region(("us-south1-b", "us-central1-c"), "us-east5") == "us-south1"
    assert default_region((), "us-east5") == "us-east5"
