"""What a GKE node leaves a pod (its allocatable memory), read off the resolved shape, and the resolved shape as a
cache key."""

from __future__ import annotations

import functools

import pytest

from serving.shapes import resolved, resolved_shapes


def test_a_nodes_allocatable_memory_follows_gkes_reservation_formula() -> None:
    """The matrix picks a GKE machine by whether its pod memory (80% of allocatable) stages the weights: a wrong
    reservation would rank a machine whose pod cannot load the checkpoint (or skip the smallest one that can)."""
    small = next(shape for shape in resolved_shapes(platform="gke") if shape.host_memory_gib == 16)
    # 25% of 4 GiB + 20% of 4 + 10% of 8, and 100 MiB for eviction.
    assert small.allocatable_memory_gib == pytest.approx(16 - (1 + 0.8 + 0.8) - 0.1)
    large = max(resolved_shapes(platform="gke"), key=lambda shape: shape.host_memory_gib)
    reserved = 1 + 0.8 + 0.8 + 112 * 0.06 + (large.host_memory_gib - 128) * 0.02
    assert large.allocatable_memory_gib == pytest.approx(large.host_memory_gib - reserved - 0.1)


def test_only_a_gke_machine_has_allocatable_memory() -> None:
    """A Cloud Run GPU or a TPU VM slice has no kubelet: asking it for a node's allocatable is a mistake, said so."""
    cloud_run = resolved_shapes(platform="cloud-run")[0]
    with pytest.raises(KeyError, match="is not a GKE machine type"):
        _ = cloud_run.allocatable_memory_gib


def test_a_resolved_shape_keys_a_cache() -> None:
    """The advisor caches each fit by its shape (an `lru_cache`): an unhashable shape would fail every advise."""
    calls: list[object] = []

    @functools.cache
    def answer(shape: object) -> int:
        calls.append(shape)
        return len(calls)

    first = resolved_shapes()[0]
    assert answer(first) == answer(resolved(first.name)) == 1
    assert len(set(resolved_shapes())) == len(resolved_shapes())
