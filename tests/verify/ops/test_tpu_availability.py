"""`verify preflight` for a TPU stack: v6e quota and offers in every zone and tier, ranked, against the fake.

The hunt this replaces went zone by zone by hand; each test is a question the user had to answer that way.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, ROOT, Project, ops_stack
from verify.cli import main
from verify.ops import google as ops_google
from verify.ops.findings import Verdict
from verify.ops.google import API_ROOT_ENV
from verify.ops.preflight import PreflightReport, run_preflight
from verify.ops.stack import OpsPlacement
from verify.ops.tpu_availability import TpuAvailability

PREEMPTIBLE = "tpu.googleapis.com/tpu_v6e_preemptible"
FALLBACK = "tpu-v6e-fallback"  # examples/: flex-start in us-east5-a, then spot in europe-west4-a


def _now() -> datetime:
    return datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def tpu_quota(**zone_limits: int) -> Body:
    """The Cloud Quotas fixture with more preemptible v6e per zone (europe_west4_a=4), most specific first."""
    body = fixture("cloudquotas_tpu.json")
    preemptible = body["quotaInfos"][0]
    for zone, limit in zone_limits.items():
        zone_name = zone.replace("_", "-")
        preemptible["dimensionsInfos"].insert(
            0, {"dimensions": {"zone": zone_name}, "details": {"value": str(limit)}, "applicableLocations": [zone_name]}
        )
    return body


def preflight(
    fake: FakeGoogle, stack: str, project: Project | None = None, quota: Body | None = None
) -> PreflightReport:
    (project or Project()).install(fake)
    if quota is not None:
        fake.route(
            "GET",
            rf"/cloudquotas/v1/projects/{PROJECT}/locations/global/services/tpu\.googleapis\.com/quotaInfos",
            quota,
        )
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_preflight(ops_stack(stack), apis, now=_now)


def capacity(report: PreflightReport) -> TpuAvailability:
    assert report.tpu_availability is not None
    return report.tpu_availability


def test_every_v6e_zone_and_tier_is_read_and_ranked(fake: FakeGoogle) -> None:
    """One run answers for all six v6e zones x three tiers; the only zone with quota comes first."""
    report = preflight(fake, "tpu-v6e")
    found = capacity(report)
    assert found.source == "live"
    assert {(row.zone, row.tier) for row in found.rows} >= {
        (zone, tier)
        for zone in ("us-central1-b", "us-east1-d", "us-east5-a", "us-east5-b", "europe-west4-a", "asia-northeast1-b")
        for tier in ("flex-start", "spot", "guaranteed")
    }
    first = found.rows[0]
    assert (first.zone, first.tier, first.placement, first.grantable) == ("us-east5-a", "flex-start", 1, True)
    assert first.answer == "us-east5-a flex-start: 8 preemptible chips free (limit 8, in use 0) [placement 1]"
    europe = next(row for row in found.rows if (row.zone, row.tier) == ("europe-west4-a", "flex-start"))
    assert europe.grantable is False
    assert europe.answer.startswith("europe-west4-a flex-start: 0 preemptible chips free (limit 0")
    assert "not in Google's published flex-start zones" in europe.answer
    assert [row.rank for row in found.rows] == list(range(1, len(found.rows) + 1))
    assert report.exit_code == 0
    ranked = next(f for f in report.findings if f.area == "availability")
    assert ranked.detail.startswith("ranked: us-east5-a flex-start: 8 preemptible chips free")


def test_a_zone_without_the_slice_or_runtime_is_ranked_last_with_the_reason(fake: FakeGoogle) -> None:
    """A zone whose TPU API does not list the slice is never offered as a place to go."""
    report = preflight(fake, "tpu-v6e", Project(v6e_zones={"us-east5-a", "europe-west4-a"}), tpu_quota(us_central1_b=8))
    central = next(row for row in capacity(report).rows if (row.zone, row.tier) == ("us-central1-b", "spot"))
    assert central.offers_slice is False
    assert central.grantable is False
    assert central.answer == "us-central1-b spot: v6e-1 not offered"


def test_first_placement_without_quota_second_with_quota_exits_0(fake: FakeGoogle) -> None:
    """us-east5-a's 8 chips all in use, 4 spot chips free in europe-west4-a: `pulumi up` will land in the second."""
    report = preflight(fake, FALLBACK, Project(usage={(PREEMPTIBLE, "us-east5-a"): 8}), tpu_quota(europe_west4_a=4))
    assert report.exit_code == 0, [f for f in report.findings if f.verdict is Verdict.BLOCKER]
    first_quota = next(f for f in report.findings if f.item == "TPU v6e chips (preemptible, flex-start, us-east5-a)")
    assert first_quota.verdict is Verdict.INFO
    assert first_quota.detail.startswith("placement 1 (us-east5-a flex-start) cannot be granted now, `pulumi up` tries")
    placements = next(f for f in report.findings if f.area == "placements")
    assert placements.verdict is Verdict.PASS
    assert placements.detail == "placement 2 (europe-west4-a spot) can be granted now"
    best = capacity(report).rows[0]
    assert (best.zone, best.tier, best.placement, best.free) == ("europe-west4-a", "spot", 2, 4)


def test_no_placement_grantable_exits_1_with_each_blocker(fake: FakeGoogle) -> None:
    """Neither placement has quota: exit 1, and each placement's blocker says where to ask."""
    report = preflight(fake, FALLBACK, Project(usage={(PREEMPTIBLE, "us-east5-a"): 8}))
    assert report.exit_code == 1
    blockers = [f for f in report.findings if f.verdict is Verdict.BLOCKER]
    assert {f.item for f in blockers} == {
        "TPU v6e chips (preemptible, flex-start, us-east5-a)",
        "TPU v6e chips (preemptible, spot, europe-west4-a)",
    }
    assert all("request at least" in (f.fix or "") for f in blockers)
    placements = next(f for f in report.findings if f.area == "placements")
    assert placements.detail == "no placement can be granted now (see each above)"


def test_flex_start_outside_the_table_is_checked_live_and_noted(fake: FakeGoogle) -> None:
    """Flex-start in europe-west4-a (the hand-made deployment's zone) is not refused: its quota is read live."""
    europe = OpsPlacement(zone="europe-west4-a", provisioning="flex-start")
    stack = ops_stack("tpu-v6e").model_copy(
        update={"zone": europe.zone, "region": "europe-west4", "placements": (europe,)}
    )
    Project().install(fake)
    fake.route(
        "GET",
        rf"/cloudquotas/v1/projects/{PROJECT}/locations/global/services/tpu\.googleapis\.com/quotaInfos",
        tpu_quota(europe_west4_a=4),
    )
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(stack, apis, now=_now)
    assert report.exit_code == 0
    note = next(f for f in report.findings if f.item == "flex-start in europe-west4-a")
    assert note.verdict is Verdict.INFO
    assert "checked live above; Google may still refuse the request" in note.detail


def test_quota_api_unreadable_falls_back_to_the_static_table_and_says_so(fake: FakeGoogle) -> None:
    """Cloud Quotas disabled: zones still listed from serving/tpu_offers.py, marked static, exit 2 (unchecked)."""
    Project().install(fake)
    fake.fail("GET", r"/cloudquotas/v1/.*", "error_service_disabled.json")
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("tpu-v6e"), apis, now=_now)
    assert report.exit_code == 2
    found = capacity(report)
    assert found.source == "static"
    assert found.source_note.startswith("Cloud Quotas unreadable (cloudquotas: 403 PERMISSION_DENIED")
    assert "static table serving/tpu_offers.py" in found.source_note
    assert all(row.grantable is None for row in found.rows)
    assert found.rows[0].answer == "us-east5-a flex-start: quota unknown (Cloud Quotas unreadable) [placement 1]"


def test_tpu_api_unreachable_marks_offers_from_the_table(fake: FakeGoogle) -> None:
    """The TPU API refuses: offers are unknown, each row says whether the static table lists it."""
    Project().install(fake)
    fake.fail("GET", r"/tpu/v2/.*", "error_service_disabled.json")
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("tpu-v6e"), apis, now=_now)
    found = capacity(report)
    assert found.source == "static"
    assert "the TPU API unreadable" in found.source_note
    assert found.rows[0].answer.endswith("offer unknown (TPU API unreadable), listed in the static table [placement 1]")


def _cli(fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(API_ROOT_ENV, fake.url)
    monkeypatch.setattr(ops_google, "adc_tokens", lambda: tokens)
    return main(["preflight", "--project", PROJECT, *args])


def test_cli_prints_quota_per_zone_and_tier_ranked(
    fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gemma-verify preflight --stack tpu-v6e`: the ranked table, exit 0; `--json` carries the same rows."""
    Project().install(fake)
    assert _cli(fake, monkeypatch, "--stack", "tpu-v6e") == 0
    out = capsys.readouterr().out
    assert "TPU v6e-1 (1 chip(s)) by zone and tier, ranked (live)" in out
    assert re.search(r"│ 1\s+│ us-east5-a\s+│ flex-start", out)
    assert _cli(fake, monkeypatch, "--stack", "tpu-v6e", "--json") == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["tpu_availability"]["rows"][0]["zone"] == "us-east5-a"


def test_cli_exits_1_when_no_placement_of_the_list_can_be_granted(
    fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both placements of the example without quota: the command exits 1."""
    Project(usage={(PREEMPTIBLE, "us-east5-a"): 8}).install(fake)
    assert _cli(fake, monkeypatch, "--stack", FALLBACK) == 1
    assert "blocked: 2 blocker(s)" in capsys.readouterr().out
