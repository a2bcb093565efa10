"""Opening a GKE cluster's control plane takes named, narrow networks (stacks/gke.py ControlPlaneSettings).

The red team's attacks: ask for a public control plane without ranges (open to all), name the internet in
pieces (0.0.0.0/1 + 128.0.0.0/1), an IPv6 /0, ranges that silently do nothing, settings for an existing
cluster the stack never changes, and a GPU pod as root through the mount's uid. Each is refused at load,
naming the key.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import GkeStack
from tests.conftest import stack_config

GPU = "gke-l4x4"


def _load(stack: str, cluster: dict[str, Any] | None = None, **blocks: Any) -> GkeStack:
    values = dict(stack_config(stack).values)
    gke = json.loads(values["gemma-serving:gke"])
    if cluster is not None:
        gke["cluster"] = {**gke.get("cluster", {}), **cluster}
    gke.update(blocks)
    values["gemma-serving:gke"] = json.dumps(gke)
    settings = settings_from_config(values)
    assert isinstance(settings, GkeStack)
    return settings


def _refused(stack: str, cluster: dict[str, Any] | None = None, **blocks: Any) -> str:
    with pytest.raises(StackConfigError) as error:
        _load(stack, cluster, **blocks)
    return str(error.value)


def test_the_default_control_plane_is_closed() -> None:
    """A stack that says nothing gets no public IP endpoint and no authorized network."""
    settings = _load(GPU)
    assert settings.gke.cluster.control_plane.public_endpoint is False
    assert settings.gke.cluster.control_plane.authorized_networks == ()
    assert settings.gke.cluster.cloud_nat is True


def test_a_public_control_plane_without_ranges_is_refused() -> None:
    message = _refused(GPU, {"controlPlane": {"publicEndpoint": True}})
    assert "gke.cluster.controlPlane.authorizedNetworks" in message
    assert "publicEndpoint is true" in message


@pytest.mark.parametrize(
    "ranges",
    [["0.0.0.0/0"], ["0.0.0.0/1", "128.0.0.0/1"], ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"]],
    ids=["whole", "halves", "pieces"],
)
def test_the_internet_in_any_combination_is_refused(ranges: list[str]) -> None:
    message = _refused(GPU, {"controlPlane": {"publicEndpoint": True, "authorizedNetworks": ranges}})
    assert "gke.cluster.controlPlane.authorizedNetworks" in message


def test_ipv6_ranges_are_refused_because_gke_takes_ipv4_only() -> None:
    message = _refused(GPU, {"controlPlane": {"publicEndpoint": True, "authorizedNetworks": ["2001:db8::/32"]}})
    assert "IPv4" in message


def test_ranges_without_a_public_endpoint_are_refused_not_ignored() -> None:
    message = _refused(GPU, {"controlPlane": {"authorizedNetworks": ["203.0.113.0/24"]}})
    assert "applies only with publicEndpoint: true" in message


def test_narrow_named_networks_are_accepted() -> None:
    settings = _load(GPU, {"controlPlane": {"publicEndpoint": True, "authorizedNetworks": ["203.0.113.0/24"]}})
    assert settings.gke.cluster.control_plane.authorized_networks == ("203.0.113.0/24",)


@pytest.mark.parametrize("key", ["controlPlane", "cloudNat"])
def test_cluster_network_settings_for_an_existing_cluster_are_refused(key: str) -> None:
    """An existing cluster is read, never changed: a setting that would not apply must not look applied."""
    value: object = {"publicEndpoint": False} if key == "controlPlane" else False
    message = _refused(GPU, {"existing": "projects/p/locations/us-central1/clusters/shared", key: value})
    assert f"gke.cluster.{key} applies only to a cluster the stack creates" in message


def test_a_gpu_pod_as_root_through_the_mount_uid_is_refused() -> None:
    """uid 0 would make the non-root pod root again (it owns the weights' mount)."""
    message = _refused(GPU, mount={"uid": 0})
    assert "gke.mount.uid 0" in message
