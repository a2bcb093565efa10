"""`verify status` reaches a private cluster through its DNS endpoint.

The stack's clusters are private by default: the control plane's public IP endpoint is off, so calling
`Cluster.endpoint` (the private IP) from a laptop hangs until the deadline and reports "could not check".
The body below is the GKE API v1 `Cluster` with `controlPlaneEndpointsConfig.dnsEndpointConfig`
(container.v1.json, googleapis/google-api-python-client discovery_cache).
"""

from __future__ import annotations

import json
from typing import Any

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import FIXTURES, tokens
from verify.ops.gke_status import real_cluster
from verify.ops.k8s_answers import GkeCluster

DNS = "gke-0123456789abcdef-123456789.us-east5.gke.goog"


def _cluster(**extra: Any) -> GkeCluster:
    body = json.loads((FIXTURES / "gke_cluster_running.json").read_text(encoding="utf-8"))
    # No CA: the fixture's is a placeholder, and the client would load it.
    return GkeCluster.model_validate({**body, "endpoint": "10.0.0.2", "masterAuth": {}, **extra})


def _base_url(cluster: GkeCluster) -> str:
    with GoogleApis(tokens) as apis, real_cluster(apis)(cluster) as api:
        return str(api._client.base_url)


def test_a_private_cluster_is_called_at_its_dns_endpoint() -> None:
    cluster = _cluster(
        controlPlaneEndpointsConfig={"dnsEndpointConfig": {"endpoint": DNS, "allowExternalTraffic": True}}
    )
    assert cluster.dns_endpoint == DNS
    assert _base_url(cluster) == f"https://{DNS}"


def test_a_dns_endpoint_closed_to_outside_traffic_is_not_used() -> None:
    cluster = _cluster(controlPlaneEndpointsConfig={"dnsEndpointConfig": {"endpoint": DNS}})
    assert cluster.dns_endpoint is None
    assert _base_url(cluster) == "https://10.0.0.2"
