"""A GKE stack's fixed price: the cluster management fee is in the price book (serving/pricing.py relies on it)."""

from __future__ import annotations

from serving.pricing import price_book


def test_the_cluster_management_fee_has_a_rate_and_its_source() -> None:
    """Guards against a GKE plan whose fixed price fails on a missing fee instead of showing the cost."""
    fee = price_book().gke.cluster_fee_per_hour
    assert fee.usd is not None
    assert fee.usd > 0
    assert fee.source.startswith("https://cloud.google.com/")
