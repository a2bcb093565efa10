"""Settings of a TPU VM stack: where to queue for a node, on what terms, and who may reach it.

Why a model of its own: TPU chips come through queued resources, zone by zone and tier by
tier, and the hand-made deployment got each of these wrong at least once (a zone without v6e, vLLM on a
public IP with no firewall, a flex-start request with no end). Everything here is checked before the
first request is queued, with a message naming the key and what is allowed.
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator

from policy.source_ranges import allowed_text, checked_cidr, describe, too_wide
from serving.container import VLLM_PORT
from serving.durations import duration_seconds
from serving.gcp_names import SECRET_ID, VPC_NAME, region_of
from serving.shapes import ResolvedShape, resolved, resolved_shapes, tpu_slices, tpu_zones
from serving.tpu_offers import FLEX_START_MAX_RUN_SECONDS, FLEX_START_MIN_RUN_SECONDS
from stacks.base import SettingsModel
from stacks.bounds import MAX_DURATION_SECONDS

# A flex-start node's run when the stack names none: a working session, then it ends by itself.
DEFAULT_FLEX_START_RUN_SECONDS = 4 * 3600

_RESERVATION = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$|^projects/[^/]+/locations/[^/]+/reservations/[^/]+$")
_NETWORK_NAME = VPC_NAME


def _secret_reference(value: str) -> bool:
    """A secret id, or its full name `projects/<project>/secrets/<id>`."""
    parts = value.split("/")
    if len(parts) == 4 and parts[0] == "projects" and parts[1] and parts[2] == "secrets":
        value = parts[3]
    return bool(SECRET_ID.match(value))


def parse_duration(value: object) -> int:
    """Seconds from `4h`, `90m`, `7d`, `3600s` or a plain number of seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 4h, 90m, 7d or 3600s")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str) and (written := duration_seconds(value)) is not None:
        seconds = written
    else:
        raise ValueError(f"{value!r} is not a duration; write a whole number with s, m, h or d (e.g. 4h, 90m)")
    if seconds <= 0:
        raise ValueError(f"{value!r}: a duration must be positive")
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"{value!r}: a duration is at most 365d ({MAX_DURATION_SECONDS} s)")
    return seconds


# A duration in seconds, written in stack files as 4h / 90m / 7d / 3600s.
Duration = Annotated[int, BeforeValidator(parse_duration)]


class ProvisioningModel(enum.StrEnum):
    """How the queued resource obtains its chips."""

    # Dynamic Workload Scheduler: waits for capacity, then runs for at most maxRunDuration (<= 7 days);
    # needs preemptible quota; the node is deleted when the run ends (the request turns SUSPENDED).
    FLEX_START = "flex-start"
    # Spot: cheapest, no run limit, but Google can preempt the node at any time.
    SPOT = "spot"
    # Guaranteed (on-demand quota or a reservation): not preempted; optionally bound to a reservation.
    GUARANTEED = "guaranteed"


class TpuProvisioning(SettingsModel):
    """The tier a queued resource asks for, with the terms that only make sense for that tier."""

    model: ProvisioningModel = ProvisioningModel.FLEX_START
    # flex-start only: the most the node may run before Google deletes it (cost control). Default 4h.
    max_run_duration: Duration | None = None
    # guaranteed only: a reservation name (or projects/.../locations/<zone>/reservations/<name>).
    reservation: str | None = None

    @field_validator("reservation")
    @classmethod
    def _reservation_name(cls, value: str | None) -> str | None:
        if value is not None and not _RESERVATION.match(value):
            raise ValueError(
                f"{value!r} is not a reservation name; write its name (lowercase letters, digits, '-') or "
                "projects/<project>/locations/<zone>/reservations/<name>"
            )
        return value

    @model_validator(mode="after")
    def _terms_match_the_tier(self) -> Self:
        if self.model is ProvisioningModel.FLEX_START:
            run = self.flex_start_run_seconds
            if not FLEX_START_MIN_RUN_SECONDS <= run <= FLEX_START_MAX_RUN_SECONDS:
                raise ValueError(
                    f"tpu.provisioning.maxRunDuration: {run}s is outside what flex-start allows here: "
                    f"between 30m (vLLM needs ~10 minutes to load and compile) and 7d (Google's limit)"
                )
            object.__setattr__(self, "max_run_duration", run)
        elif self.max_run_duration is not None:
            raise ValueError(
                f"tpu.provisioning.maxRunDuration applies only to model flex-start, not {self.model.value}; "
                "remove it (spot and guaranteed nodes run until deleted or preempted)"
            )
        if self.reservation is not None and self.model is not ProvisioningModel.GUARANTEED:
            raise ValueError(f"tpu.provisioning.reservation applies only to model guaranteed, not {self.model.value}")
        return self

    @property
    def flex_start_run_seconds(self) -> int:
        """The most a flex-start node may run: tpu.provisioning.maxRunDuration, 4 hours when unset."""
        return self.max_run_duration if self.max_run_duration is not None else DEFAULT_FLEX_START_RUN_SECONDS


def _generations() -> str:
    """How a message names every TPU generation a TPU VM rents (a zone checked before the stack's is known)."""
    generations = {slice_shape.short_name: None for slice_shape in resolved_shapes(platform="tpu-vm")}
    return " or ".join(generations)


def tpu_zone(key: str, zone: str, slice_shape: ResolvedShape | None = None) -> str:
    """The zone, refused when the slice (None: a TPU VM of any generation the table rents) is not offered there.
    A block is checked before it knows the stack's generation; the stack checks the pair (stacks/tpu_stack.py)."""
    allowed = tpu_zones() if slice_shape is None else slice_shape.zones
    if zone not in allowed:
        named = _generations() if slice_shape is None else slice_shape.short_name
        raise ValueError(
            f"{key} {zone!r} has no {named}; allowed: {', '.join(allowed)} "
            "(source: https://cloud.google.com/tpu/docs/regions-zones)"
        )
    return zone


# A request that waits its full tpu.activeDeadline in each placement keeps `pulumi up` busy n times as long.
MAX_PLACEMENTS = 6


class TpuPlacement(SettingsModel):
    """One place to ask for the node: a zone and a tier (`provisioning: spot` is short for `{model: spot}`)."""

    zone: str
    provisioning: TpuProvisioning = TpuProvisioning()

    @field_validator("zone")
    @classmethod
    def _tpu_zone(cls, zone: str) -> str:
        return tpu_zone("tpu.placements[].zone", zone)

    @field_validator("provisioning", mode="before")
    @classmethod
    def _tier_name(cls, value: object) -> object:
        return {"model": value} if isinstance(value, str) else value

    @property
    def label(self) -> str:
        return f"{self.zone} {self.provisioning.model.value}"


def _check_placements(tpu: TpuSettings) -> None:
    """The first placement is the stack's zone and tier; no placement twice; a subnetwork stays in its region."""
    if not tpu.placements:
        return
    first = tpu.placements[0]
    if (first.zone, first.provisioning) != (tpu.zone, tpu.provisioning):
        raise ValueError(
            f"tpu.placements[0] ({first.label}) must be tpu.zone with tpu.provisioning ({tpu.zone} "
            f"{tpu.provisioning.model.value}): leave tpu.zone and tpu.provisioning out (they default to the first "
            "placement) or list them first"
        )
    seen: set[tuple[str, ProvisioningModel]] = set()
    for index, placement in enumerate(tpu.placements):
        key = (placement.zone, placement.provisioning.model)
        if key in seen:
            raise ValueError(f"tpu.placements[{index}]: {placement.label} is listed twice; list each once")
        seen.add(key)
        if tpu.subnetwork is not None and region_of(placement.zone) != region_of(first.zone):
            raise ValueError(
                f"tpu.placements[{index}]: {placement.zone} is outside {region_of(first.zone)}, the region of "
                f"tpu.subnetwork {tpu.subnetwork!r} (a subnetwork is regional); drop tpu.subnetwork or keep the "
                "placements in one region"
            )


class TpuSettings(SettingsModel):
    """Everything a TPU stack says about its node (the `tpu:` block of the stack settings)."""

    zone: str
    # One of the TPU generation's single-host slices (serving/data/shapes.json): by default the smallest slice
    # of the table's first TPU VM generation (a stack of another generation names its slice; stacks/tpu_stack.py).
    accelerator_type: str = min(tpu_slices(), key=lambda name: tpu_slices()[name])
    provisioning: TpuProvisioning = TpuProvisioning()
    # Where else to ask, in order (the first is tpu.zone with tpu.provisioning): `pulumi up` moves to the next
    # when a request is refused, fails or waits past tpu.activeDeadline (docs/tpu.md).
    placements: tuple[TpuPlacement, ...] = Field(default=(), max_length=MAX_PLACEMENTS)
    # Queueing policy: Google fails the request if no capacity arrived within this time (unset: no limit).
    valid_until_duration: Duration | None = None
    # How long `pulumi up` waits for the request to turn ACTIVE before giving up (and withdrawing it).
    active_deadline: Duration = 2 * 3600
    network: str = "default"
    subnetwork: str | None = None
    # false (default): internal IP only. true: an external IP, reachable only from allowedSourceRanges.
    public_endpoint: bool = False
    # Who may open the vLLM port (CIDRs). Required when publicEndpoint is true; never 0.0.0.0/0 or ::/0.
    allowed_source_ranges: tuple[str, ...] = ()
    # Allow SSH from Google's IAP range (35.235.240.0/20) so `gcloud ... tpu-vm ssh --tunnel-through-iap`
    # can forward the port to a laptop; IAP still requires roles/iap.tunnelResourceAccessor.
    iap_ssh: bool = True
    # Cloud NAT so an internal-only node can pull the image; turn off when the VPC already has NAT.
    egress_nat: bool = True
    # The vLLM port on the node (the image is the stack's top-level `image`, default vllm/vllm-tpu).
    port: int = Field(default=VLLM_PORT, ge=1024, le=65535)
    # An existing Secret Manager secret with a Hugging Face token, only for checkpoints fetched from the Hub.
    hf_token_secret: str | None = None

    @field_validator("zone")
    @classmethod
    def _tpu_zone(cls, zone: str) -> str:
        return tpu_zone("tpu.zone", zone)

    @field_validator("accelerator_type")
    @classmethod
    def _a_slice(cls, value: str) -> str:
        """The slices of the shapes table, named as pydantic names a Literal's choices (the message users knew)."""
        slices = tpu_slices()
        if value not in slices:
            names = [f"'{name}'" for name in slices]
            raise ValueError(f"Input should be {', '.join(names[:-1])} or {names[-1]}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _first_placement(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        """With tpu.placements, tpu.zone and tpu.provisioning default to the first placement."""
        if not isinstance(data, dict) or not isinstance(data.get("placements"), list | tuple):
            return data
        first = data["placements"][0] if data["placements"] else None
        if not isinstance(first, dict):
            return data
        filled = dict(data)
        filled.setdefault("zone", first.get("zone"))
        if "provisioning" not in filled and "provisioning" in first:
            filled["provisioning"] = first["provisioning"]
        return filled

    @field_validator("allowed_source_ranges", mode="before")
    @classmethod
    def _ranges(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError("tpu.allowedSourceRanges must be a list of CIDRs, e.g. [203.0.113.0/24]")
        return value

    @field_validator("allowed_source_ranges")
    @classmethod
    def _no_open_ranges(cls, ranges: tuple[str, ...]) -> tuple[str, ...]:
        problems: list[str] = []
        checked: list[str] = []
        for value in ranges:
            try:
                checked.append(checked_cidr(value))
            except ValueError as error:
                problems.append(str(error))
        if problems:
            raise ValueError("tpu.allowedSourceRanges: " + "; ".join(problems))
        # Judged together: 0.0.0.0/1 + 128.0.0.0/1 opens the port as widely as 0.0.0.0/0.
        wide = too_wide(checked)
        if wide:
            raise ValueError(
                f"{list(checked)} together let in {'; '.join(describe(item) for item in wide)}. "
                "vLLM's --api-key guards only /v1/*: /metrics, /tokenize and /health answer anyone who can reach "
                f"the port. Allowed: {allowed_text()}; name the networks that call it"
            )
        return tuple(checked)

    @field_validator("network", "subnetwork")
    @classmethod
    def _network_name(cls, value: str | None) -> str | None:
        if value is not None and not _NETWORK_NAME.match(value):
            raise ValueError(f"{value!r} is not a VPC network/subnetwork name or projects/... path")
        return value

    @field_validator("hf_token_secret")
    @classmethod
    def _secret_id(cls, value: str | None) -> str | None:
        if value is not None and not _secret_reference(value):
            raise ValueError(f"tpu.hfTokenSecret {value!r} is not a secret id or projects/<p>/secrets/<id>")
        return value

    @field_validator("active_deadline")
    @classmethod
    def _deadline(cls, seconds: int) -> int:
        if not 10 * 60 <= seconds <= 7 * 24 * 3600:
            raise ValueError(f"tpu.activeDeadline {seconds}s: allowed between 10m and 7d")
        return seconds

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.public_endpoint and not self.allowed_source_ranges:
            raise ValueError(
                "tpu.allowedSourceRanges: publicEndpoint is true, so name the CIDRs allowed to reach the vLLM "
                "port (e.g. [203.0.113.0/24]); an open port would expose /metrics and the engine to anyone"
            )
        if self.allowed_source_ranges and not self.public_endpoint:
            raise ValueError(
                "tpu.allowedSourceRanges applies only with publicEndpoint: true (the node has an internal IP "
                "only, reachable from the VPC); remove it, or set publicEndpoint: true to open the port to them"
            )
        _check_placements(self)
        return self

    @property
    def placement_list(self) -> tuple[TpuPlacement, ...]:
        """Where and on what terms to ask, in order: tpu.placements, or the stack's zone and provisioning."""
        return self.placements or (TpuPlacement(zone=self.zone, provisioning=self.provisioning),)

    def placement_warnings(self) -> list[str]:
        """Flex-start outside Google's published zones for the slice: tried (preflight checks it
        live), never refused."""
        slice_shape = self.shape
        published = slice_shape.flex_start_zones
        warnings = []
        for index, placement in enumerate(self.placement_list):
            flex_start = placement.provisioning.model is ProvisioningModel.FLEX_START
            if flex_start and placement.zone not in published:
                where = f"tpu.placements[{index}]" if self.placements else "tpu.zone"
                warnings.append(
                    f"{where}: flex-start in {placement.zone} is not in Google's published flex-start zones for "
                    f"{slice_shape.short_name} ({', '.join(published)}, serving/data/shapes.json); it is tried "
                    "anyway: run `gemma-verify preflight` to check its quota live, and if Google refuses it "
                    "`pulumi up` moves to the next placement (or fails with Google's reason when there is none)"
                )
        return warnings

    @property
    def shape(self) -> ResolvedShape:
        """The slice (tpu.acceleratorType), resolved once by serving/shapes.py."""
        return resolved(self.accelerator_type)

    @property
    def chips(self) -> int:
        return self.shape.chips

    @property
    def region(self) -> str:
        return region_of(self.zone)
