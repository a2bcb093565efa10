"""The all-clear project, as routes on FakeGoogle; each test changes one thing about it.

The answers echo what was asked where Google's do (services:batchGet returns the services named,
testIamPermissions the subset granted, timeSeries.list the series matching the filter).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, fixture_text
from verify.ops.stack import OpsStack, load_ops_stack

ROOT = Path(__file__).resolve().parents[3]
PROJECT = "proj-1"
STACKS = ("l4", "rtx6000", "tpu-v6e")
_FILTER_VALUE = re.compile(r'(metric\.labels\.quota_metric|resource\.labels\.location)="([^"]+)"')


@functools.cache
def ops_stack(name: str) -> OpsStack:
    """The repository's own stack file, with project proj-1: read once per test process (the model is frozen, and
    183 tests ask for one of three files)."""
    return load_ops_stack(name, root=ROOT, project=PROJECT)


@dataclass
class Project:
    disabled_apis: set[str] = field(default_factory=set)
    missing_permissions: set[str] = field(default_factory=set)
    # (quota metric, location) -> allocation usage reported by Monitoring; absent means no series.
    usage: dict[tuple[str, str], int] = field(default_factory=dict)
    # Zones whose acceleratorTypes.list offers v6e; None means every zone asked.
    v6e_zones: set[str] | None = None
    runtime_zones: set[str] | None = None

    def install(self, fake: FakeGoogle) -> None:
        fake.route("GET", rf"/serviceusage/v1/projects/{PROJECT}/services:batchGet", self._batch_get)
        fake.route("POST", rf"/cloudresourcemanager/v3/projects/{PROJECT}:testIamPermissions", self._test_iam)
        for service in ("run", "tpu", "compute"):
            fake.route(
                "GET",
                rf"/cloudquotas/v1/projects/{PROJECT}/locations/global/services/{service}\.googleapis\.com/quotaInfos",
                fixture(f"cloudquotas_{service}.json"),
            )
        fake.route("GET", rf"/monitoring/v3/projects/{PROJECT}/timeSeries", self._time_series)
        fake.route("GET", rf"/tpu/v2/projects/{PROJECT}/locations/([a-z0-9-]+)/acceleratorTypes", self._types)
        fake.route("GET", rf"/tpu/v2/projects/{PROJECT}/locations/([a-z0-9-]+)/runtimeVersions", self._runtimes)

    def _batch_get(self, _m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        services = [
            {
                "name": name.replace(f"projects/{PROJECT}", "projects/123456789012"),
                "parent": "projects/123456789012",
                "state": "DISABLED" if name.rsplit("/", 1)[-1] in self.disabled_apis else "ENABLED",
                "config": {"name": name.rsplit("/", 1)[-1], "title": name.rsplit("/", 1)[-1]},
            }
            for name in query.get("names", [])
        ]
        return 200, {"services": services}

    def _test_iam(self, _m: re.Match[str], _q: dict[str, list[str]], body: Body) -> tuple[int, Body]:
        granted = [name for name in body.get("permissions", []) if name not in self.missing_permissions]
        return 200, {"permissions": granted} if granted else {}

    def _time_series(self, _m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        wanted = dict(_FILTER_VALUE.findall(query.get("filter", [""])[0]))
        metric, location = wanted.get("metric.labels.quota_metric", ""), wanted.get("resource.labels.location", "")
        if (metric, location) not in self.usage:
            return 200, {}
        body = fixture_text(
            "monitoring_quota_usage.json",
            METRIC=metric,
            LOCATION=location,
            SERVICE=metric.split("/", 1)[0],
            USAGE=str(self.usage[(metric, location)]),
        )
        return 200, body

    def _types(self, found: re.Match[str], _q: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        zone = found.group(1)
        if self.v6e_zones is not None and zone not in self.v6e_zones:
            return 200, {}
        return 200, fixture_text("tpu_accelerator_types.json", ZONE=zone)

    def _runtimes(self, found: re.Match[str], _q: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        zone = found.group(1)
        if self.runtime_zones is not None and zone not in self.runtime_zones:
            return 200, {"runtimeVersions": [{"name": "x", "version": "tpu-ubuntu2204-base"}]}
        return 200, fixture_text("tpu_runtime_versions.json", ZONE=zone)
