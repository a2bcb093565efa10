"""`verify preflight` for a TPU stack: where its slice can be had now, zone by zone and tier by tier, ranked.

Why every zone and not the stack's own: the hunt this replaces went zone by zone by hand ("finally a zone
with availability and quota was found"). One run reads, for the stack's slice, its generation's quota limit
(Cloud Quotas quotaInfos.list) and its usage (Monitoring's quota allocation series) in every zone that
offers the generation, whether the zone lists the slice and the runtime version (TPU acceleratorTypes.list,
runtimeVersions.list), and ranks every (zone, tier): grantable first, the stack's own placements first
among those, then the most free chips. Flex-start and spot draw on the preemptible quota (one pool per
zone, shared by both), guaranteed on the on-demand one.

The zones asked are the stack's placements, the zones `serving/tpu_offers.py` lists, and any zone the
project's quota for the generation names in a region that list or the placements name, at most MAX_ZONES in
all; at most MAX_QUOTA_INFOS quotas of each kind are read, and list reads stop at OFFER_PAGES pages. Why
bounded: the quota answer is Google's text, and a hostile one naming 400 zones made preflight issue
1,218 calls; zones left out are named in the availability's note. When Cloud Quotas or the TPU API cannot
be read, the rows fall back to that static table, and the availability says so (`source: static`) instead
of presenting it as checked.

Each placement of the stack gets the findings a single zone always had (quota, slice, runtime); when at
least one placement can be granted, the others' blockers become notes (`pulumi up` tries them and moves
on), so the exit code is 0 when one placement of the list can be granted and 1 when none can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError, parse_answer
from serving.gcp_names import region_of
from serving.shapes import flex_start_zones, quota_words, shape, short_name, tier_zones, tpu_zones
from verify.ops import deploy_requirements
from verify.ops.answers import AcceleratorType, RuntimeVersion
from verify.ops.findings import Finding, Verdict
from verify.ops.quotas import Now, QuotaInfo, allocation_usage, compare, quota_infos
from verify.ops.stack import OpsPlacement, TpuOpsStack

QuotaKind = Literal["preemptible", "on-demand"]
# The stack file's tiers (stacks/tpu.py ProvisioningModel), cheapest list price first.
TIERS: tuple[str, ...] = ("flex-start", "spot", "guaranteed")
_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")
# The most zones one preflight asks about (the table lists 6 zones for v6e; a placement list adds a few).
MAX_ZONES = 16
# The most quotas of each kind read (Google has one per kind and tier family; a few spare for renames).
MAX_QUOTA_INFOS = 4
# Pages of acceleratorTypes / runtimeVersions read per zone (each fits one page today).
OFFER_PAGES = 5
ReadError = GoogleApiError | CannotCheckError


def quota_kind(tier: str) -> QuotaKind:
    return "on-demand" if tier == "guaranteed" else "preemptible"


def listed_zones(stack: TpuOpsStack, tier: str) -> tuple[str, ...]:
    """Where Google's pages (the shapes table) say the tier offers the stack's slice's generation."""
    return tier_zones(_accelerator(stack), tier)


def _accelerator(stack: TpuOpsStack) -> str:
    """The slice's TPU generation, as the shapes table keys it."""
    return shape(stack.accelerator_type).accelerator


class ZoneTier(pydantic.BaseModel):
    """One zone and tier for the stack's slice: its quota, what the zone offers, and the answer in words."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    rank: int
    zone: str
    tier: str
    quota: QuotaKind
    limit: float | None = None  # chips; None when unknown; -1 unlimited
    usage: float | None = None
    free: float | None = None
    offers_slice: bool | None = None  # None: the TPU API could not be read
    offers_runtime: bool | None = None
    listed: bool  # in serving/tpu_offers.py for this tier
    grantable: bool | None = None  # None: not known (something could not be read)
    placement: int | None = None  # its number in the stack's list, when it is one
    answer: str


class TpuAvailability(pydantic.BaseModel):
    """Every (zone, tier) for the stack's slice, ranked, and where the numbers came from."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    accelerator_type: str
    chips: int
    runtime_version: str
    source: Literal["live", "static"]
    source_note: str
    rows: list[ZoneTier]

    @property
    def ranked_answer(self) -> str:
        """The best rows in words: what a user would otherwise find zone by zone."""
        grantable = [row.answer for row in self.rows if row.grantable]
        if grantable:
            more = f" (and {len(grantable) - 3} more)" if len(grantable) > 3 else ""
            return "; ".join(grantable[:3]) + more
        return "none can be granted now; " + "; ".join(row.answer for row in self.rows[:3])


@dataclass
class _Facts:
    """What Google answered (or why it could not), read once per run."""

    infos: dict[QuotaKind, list[QuotaInfo]] | None = None
    quota_error: ReadError | None = None
    offers: dict[str, bool | None] = field(default_factory=dict)
    runtimes: dict[str, bool | None] = field(default_factory=dict)
    runtime_counts: dict[str, int] = field(default_factory=dict)
    tpu_error: ReadError | None = None
    usage: dict[tuple[str, str], float] = field(default_factory=dict)
    usage_error: ReadError | None = None
    # Zones the quota answer named that were not asked about (outside the known regions, or past MAX_ZONES).
    zones_left_out: list[str] = field(default_factory=list)


def assess(stack: TpuOpsStack, apis: GoogleApis, now: Now) -> tuple[list[Finding], TpuAvailability]:
    """The placements' findings and the ranked availability of every zone and tier."""
    facts = _gather(stack, apis, now)
    availability = _availability(stack, facts)
    findings = _placement_findings(stack, facts, availability)
    return findings, availability


# --- reading ---------------------------------------------------------------------------------------------


def _gather(stack: TpuOpsStack, apis: GoogleApis, now: Now) -> _Facts:
    facts = _Facts()
    try:
        words = quota_words(shape(stack.accelerator_type).accelerator)  # the slice's generation, from the table
        facts.infos = _generation_infos(quota_infos(apis, stack.project, "tpu.googleapis.com"), words)
    except (GoogleApiError, CannotCheckError) as error:
        facts.quota_error = error
    for zone in _zones(stack, facts):
        _read_offers(stack, apis, zone, facts)
        if facts.infos is not None:
            for info in [*facts.infos["preemptible"], *facts.infos["on-demand"]]:
                _read_usage(stack, apis, (info, zone), now, facts)
    return facts


def _generation_infos(infos: list[QuotaInfo], generation: tuple[str, ...]) -> dict[QuotaKind, list[QuotaInfo]]:
    """The quotas that name the TPU generation (Google names TPU quotas per generation), by kind."""
    found: dict[QuotaKind, list[QuotaInfo]] = {"preemptible": [], "on-demand": []}
    for info in infos:
        words = f"{info.quota_id} {info.metric}".lower()
        kind: QuotaKind = "preemptible" if "preemptible" in words else "on-demand"
        if all(word in words for word in generation) and len(found[kind]) < MAX_QUOTA_INFOS:
            found[kind].append(info)
    return found


def _zones(stack: TpuOpsStack, facts: _Facts) -> list[str]:
    """The stack's placements, the table's zones for the generation, then any zone its quota names in a known
    region, at most MAX_ZONES (the rest are recorded in ``facts.zones_left_out``)."""
    zones = list(dict.fromkeys(placement.zone for placement in stack.placement_list))
    listed = tpu_zones(_accelerator(stack))
    regions = {region_of(zone) for zone in [*zones, *listed, *flex_start_zones(_accelerator(stack))]}
    declared: list[str] = []
    for info in [*(facts.infos or {}).get("preemptible", []), *(facts.infos or {}).get("on-demand", [])]:
        for dimensions in info.dimensions_infos:
            declared += [dimensions.dimensions.get("zone", ""), *dimensions.applicable_locations]
    for zone in dict.fromkeys([*listed, *declared]):
        if not _ZONE.match(zone) or zone in zones:
            continue
        if region_of(zone) in regions and len(zones) < MAX_ZONES:
            zones.append(zone)
        else:
            facts.zones_left_out.append(zone)
    return zones


def _read_offers(stack: TpuOpsStack, apis: GoogleApis, zone: str, facts: _Facts) -> None:
    if facts.tpu_error is not None:
        facts.offers[zone] = facts.runtimes[zone] = None
        return
    base = f"projects/{stack.project}/locations/{zone}"
    try:
        types = {
            parse_answer(AcceleratorType, item, "tpu").type
            for item in apis.pages("tpu", f"{base}/acceleratorTypes", "acceleratorTypes", max_pages=OFFER_PAGES)
        }
        versions = {
            parse_answer(RuntimeVersion, item, "tpu").version
            for item in apis.pages("tpu", f"{base}/runtimeVersions", "runtimeVersions", max_pages=OFFER_PAGES)
        }
    except GoogleApiError as error:
        if error.not_found or error.code == 400:  # a zone the TPU API does not serve: nothing offered there
            facts.offers[zone] = facts.runtimes[zone] = False
            facts.runtime_counts[zone] = 0
            return
        facts.tpu_error = error
        facts.offers[zone] = facts.runtimes[zone] = None
        return
    except CannotCheckError as error:
        facts.tpu_error = error
        facts.offers[zone] = facts.runtimes[zone] = None
        return
    facts.offers[zone] = stack.accelerator_type in types
    facts.runtimes[zone] = stack.runtime_version in versions
    facts.runtime_counts[zone] = len(versions)


def _location(info: QuotaInfo, zone: str) -> str:
    return zone if "zone" in info.dimensions or not info.dimensions else region_of(zone)


def _read_usage(stack: TpuOpsStack, apis: GoogleApis, where: tuple[QuotaInfo, str], now: Now, facts: _Facts) -> None:
    info, zone = where
    key = (info.metric, _location(info, zone))
    if facts.usage_error is not None or key in facts.usage:
        return
    try:
        facts.usage[key] = allocation_usage(apis, stack.project, info.metric, key[1], now)
    except (GoogleApiError, CannotCheckError) as error:
        facts.usage_error = error


# --- the ranked matrix ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Quota:
    limit: float | None
    usage: float | None
    free: float | None
    problem: str | None  # why it is unknown or none


def _quota(facts: _Facts, kind: QuotaKind, zone: str) -> _Quota:
    if facts.infos is None:
        return _Quota(None, None, None, "quota unknown (Cloud Quotas unreadable)")
    infos = facts.infos[kind]
    if not infos:
        return _Quota(0, 0, 0, f"no {kind} quota for this TPU generation in the project")
    tightest: _Quota | None = None
    for info in infos:
        raw = info.limit_at(_location(info, zone))
        if raw is None:
            return _Quota(0, 0, 0, f"{kind} quota 0 (no value applies in {zone})")
        usage = facts.usage.get((info.metric, _location(info, zone)))
        if usage is None:
            return _Quota(float(raw), None, None, "usage unknown (Monitoring unreadable)")
        if raw < 0:
            candidate = _Quota(-1, usage, float("inf"), None)
        else:
            candidate = _Quota(float(raw), usage, float(raw) - usage, None)
        if tightest is None or (candidate.free or 0) < (tightest.free or 0):
            tightest = candidate
    assert tightest is not None
    return tightest


def _availability(stack: TpuOpsStack, facts: _Facts) -> TpuAvailability:
    placements = {(p.zone, p.provisioning): index + 1 for index, p in enumerate(stack.placement_list)}
    rows = [_row(stack, facts, zone, tier, placements.get((zone, tier))) for zone in facts.offers for tier in TIERS]
    rows.sort(key=_rank_key)
    ranked = [row.model_copy(update={"rank": index + 1}) for index, row in enumerate(rows)]
    problems = [
        f"{what} unreadable ({error})"
        for what, error in (("Cloud Quotas", facts.quota_error), ("the TPU API", facts.tpu_error))
        if error is not None
    ]
    if problems:
        note = (
            f"{'; '.join(problems)}: zones and tiers from the static table serving/tpu_offers.py (Google's "
            "regions-zones and flex-start pages, read 2026-11), not checked live"
        )
        source: Literal["live", "static"] = "static"
    else:
        note = "live: Cloud Quotas limits, Monitoring usage, TPU API offers"
        source = "live"
        if facts.usage_error is not None:
            note += f" (usage unreadable: {facts.usage_error})"
    if facts.zones_left_out:
        shown = ", ".join(facts.zones_left_out[:5]) + (" ..." if len(facts.zones_left_out) > 5 else "")
        note += (
            f"; {len(facts.zones_left_out)} zone(s) the quota answer named were not asked about (outside the "
            f"generation's regions, or past {MAX_ZONES} zones): {shown}"
        )
    return TpuAvailability(
        accelerator_type=stack.accelerator_type,
        chips=stack.chips,
        runtime_version=stack.runtime_version,
        source=source,
        source_note=note,
        rows=ranked,
    )


def _row(stack: TpuOpsStack, facts: _Facts, zone: str, tier: str, placement: int | None) -> ZoneTier:
    kind = quota_kind(tier)
    quota = _quota(facts, kind, zone)
    offers, runtime = facts.offers.get(zone), facts.runtimes.get(zone)
    listed = zone in listed_zones(stack, tier)
    known = quota.free is not None and offers is not None and runtime is not None
    grantable = bool(offers and runtime and (quota.free or 0) >= stack.chips) if known else None
    where = f"{zone} {tier}"
    if offers is False:
        answer = f"{where}: {stack.accelerator_type} not offered"
    elif runtime is False:
        answer = f"{where}: runtime {stack.runtime_version} not offered"
    elif quota.problem is not None:
        answer = f"{where}: {quota.problem}"
    elif quota.limit == -1:
        answer = f"{where}: {kind} quota unlimited"
    elif grantable or quota.free is not None:
        answer = (
            f"{where}: {_num(quota.free or 0)} {kind} chips free (limit {_num(quota.limit or 0)}, "
            f"in use {_num(quota.usage or 0)})"
        )
    else:
        answer = f"{where}: not known"
    if offers is None and facts.tpu_error is not None:
        answer += "; offer unknown (TPU API unreadable)" + (", listed in the static table" if listed else "")
    if tier == "flex-start" and not listed:
        answer += "; not in Google's published flex-start zones (Google may refuse it)"
    if placement is not None:
        answer += f" [placement {placement}]"
    return ZoneTier(
        rank=0,
        zone=zone,
        tier=tier,
        quota=kind,
        limit=quota.limit,
        usage=quota.usage,
        free=None if quota.free is None or quota.free == float("inf") else quota.free,
        offers_slice=offers,
        offers_runtime=runtime,
        listed=listed,
        grantable=grantable,
        placement=placement,
        answer=answer,
    )


def _rank_key(row: ZoneTier) -> tuple[int, int, bool, float, int, str]:
    """Grantable, then unknown, then not; the stack's placements in order first; what Google's pages list
    before what they do not; most free chips; cheapest tier."""
    standing = 0 if row.grantable else (1 if row.grantable is None else 2)
    placement = row.placement if row.placement is not None else 99
    free = -(row.free if row.free is not None else (1e9 if row.limit == -1 else 0))
    return standing, placement, not row.listed, free, TIERS.index(row.tier), row.zone


def _num(value: float) -> str:
    return f"{value:g}"


# --- the stack's placements ---------------------------------------------------------------------------------


def _placement_findings(stack: TpuOpsStack, facts: _Facts, availability: TpuAvailability) -> list[Finding]:
    placements = stack.placement_list
    several = len(placements) > 1
    per_placement = [_findings_of(stack, facts, placement, several) for placement in placements]
    clear = [all(f.verdict in {Verdict.PASS, Verdict.INFO} for f in found) for found in per_placement]
    findings: list[Finding] = []
    for index, (placement, found) in enumerate(zip(placements, per_placement, strict=True)):
        if any(clear) and not clear[index]:
            first = clear.index(True) + 1
            findings += [_as_note(finding, index + 1, placement, first) for finding in found]
        else:
            findings += found
    findings.append(
        Finding(
            area="availability",
            item=f"{stack.accelerator_type}, every zone and tier that offers it",
            verdict=Verdict.INFO,
            detail=f"ranked: {availability.ranked_answer}"
            + ("" if availability.source == "live" else f" ({availability.source_note})"),
        )
    )
    if several:
        granted = [index + 1 for index, ok in enumerate(clear) if ok]
        findings.append(
            Finding(
                area="placements",
                item=f"{len(placements)} in order",
                verdict=Verdict.PASS if granted else Verdict.INFO,
                detail=(
                    f"placement {granted[0]} ({placements[granted[0] - 1].label}) can be granted now"
                    + (f"; {', '.join(map(str, granted[1:]))} too" if granted[1:] else "")
                    if granted
                    else "no placement can be granted now (see each above)"
                ),
            )
        )
    return findings


def _as_note(finding: Finding, number: int, placement: OpsPlacement, first: int) -> Finding:
    """A placement that cannot be granted is not a blocker while a later one can: `pulumi up` moves on."""
    if finding.verdict in {Verdict.PASS, Verdict.INFO}:
        return finding
    return finding.model_copy(
        update={
            "verdict": Verdict.INFO,
            "detail": f"placement {number} ({placement.label}) cannot be granted now, `pulumi up` tries it and "
            f"moves on (placement {first} can be): {finding.detail}",
        }
    )


def _findings_of(stack: TpuOpsStack, facts: _Facts, placement: OpsPlacement, several: bool) -> list[Finding]:
    return [
        *_quota_findings(stack, facts, placement, several),
        *_zone_findings(stack, facts, placement),
        *_flex_start_note(stack, placement),
    ]


def _generation(stack: TpuOpsStack) -> str:
    """How findings name the slice's TPU generation (`TPU v6e`): the shapes table's, not a parsed slice name."""
    return short_name(_accelerator(stack))


def _unchecked(area: str, item: str, error: ReadError, project: str) -> Finding:
    fix = error.advice(project) if isinstance(error, GoogleApiError) else None
    return Finding(area=area, item=item, verdict=Verdict.UNCHECKED, detail=str(error), fix=fix)


def _quota_findings(stack: TpuOpsStack, facts: _Facts, placement: OpsPlacement, several: bool) -> list[Finding]:
    kind = "preemptible" if placement.preemptible else "on-demand"
    where = f", {placement.zone}" if several else ""
    tpu = _generation(stack)
    if placement.reservation is not None:
        return [
            Finding(
                area="quota",
                item=f"{tpu} ({placement.provisioning}{where})",
                verdict=Verdict.INFO,
                detail=f"draws on reservation {placement.reservation}, not on quota; check its free chips in the "
                "console",
            )
        ]
    if facts.infos is None:
        assert facts.quota_error is not None
        return [_unchecked("quota", "tpu.googleapis.com", facts.quota_error, stack.project)]
    infos = facts.infos["preemptible" if placement.preemptible else "on-demand"]
    request_url = deploy_requirements.QUOTAS_CONSOLE_URL.format(project=stack.project)
    item = f"{tpu} chips ({kind}, {placement.provisioning}{where})"
    if not infos:
        return [
            Finding(
                area="quota",
                item=f"{tpu} chips ({kind}{where})",
                verdict=Verdict.BLOCKER,
                detail=f"no {kind} {tpu} quota in tpu.googleapis.com for this project",
                fix=f"request {kind} {tpu} quota in {placement.zone}: {request_url}",
                needed=float(stack.chips),
                unit="chips",
            )
        ]
    findings = []
    for info in infos:
        location = _location(info, placement.zone)
        usage = facts.usage.get((info.metric, location))
        if usage is None:
            error = facts.usage_error or CannotCheckError(f"no usage read for {info.metric} in {location}")
            findings.append(_unchecked("quota", item, error, stack.project))
            continue
        findings.append(
            compare(
                info,
                area="quota",
                item=item,
                location=location,
                needed=float(stack.chips),
                usage=usage,
                unit="chips",
                request_url=request_url,
            )
        )
    return findings


def _zone_findings(stack: TpuOpsStack, facts: _Facts, placement: OpsPlacement) -> list[Finding]:
    zone = placement.zone
    if facts.tpu_error is not None:
        return [_unchecked("tpu-zone", zone, facts.tpu_error, stack.project)]
    here = bool(facts.offers.get(zone))
    others = [
        other for other in listed_zones(stack, placement.provisioning) if other != zone and facts.offers.get(other)
    ]
    elsewhere = f"; also offered in {', '.join(others)}" if others else "; no other candidate zone offers it"
    findings = [
        Finding(
            area="tpu-zone",
            item=f"{stack.accelerator_type} in {zone}",
            verdict=Verdict.PASS if here else Verdict.BLOCKER,
            detail=("offered" if here else "not offered") + elsewhere,
            fix=None
            if here
            else "move the stack: set gemma-serving:region and gemma-serving:tpu.zone (or tpu.placements) to one of "
            + (", ".join(others) or "the zones in serving/tpu_offers.py"),
        )
    ]
    has_runtime = bool(facts.runtimes.get(zone))
    findings.append(
        Finding(
            area="tpu-zone",
            item=f"runtime {stack.runtime_version} in {zone}",
            verdict=Verdict.PASS if has_runtime else Verdict.BLOCKER,
            detail="offered"
            if has_runtime
            else f"not offered (the zone lists {facts.runtime_counts.get(zone, 0)} other versions)",
            fix=None if has_runtime else "pick a zone that lists it (gcloud compute tpus versions list --zone Z)",
        )
    )
    return findings


def _flex_start_note(stack: TpuOpsStack, placement: OpsPlacement) -> list[Finding]:
    published = listed_zones(stack, "flex-start")
    if placement.provisioning != "flex-start" or placement.zone in published:
        return []
    return [
        Finding(
            area="tpu-zone",
            item=f"flex-start in {placement.zone}",
            verdict=Verdict.INFO,
            detail=f"not in Google's published flex-start zones for {_generation(stack)} ({', '.join(published)}, "
            "serving/tpu_offers.py): its quota and offer are checked live above; Google may still refuse the "
            "request, and then `pulumi up` moves to the next placement",
        )
    ]
