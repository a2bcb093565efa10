"""Cloud Run service settings for a vLLM server with one GPU, with Cloud Run's own limits built in.

Why: each limit here was a failed rollout in the hand-made deployments (probe values Cloud Run rejects,
a startup window shorter than the model load, a request timeout above the maximum); the model refuses
them with the key and the allowed range before anything is deployed.
"""

from __future__ import annotations

import math
import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from serving.cloud_run_limits import GPU_STARTUP_PROBE_MAX_SECONDS, MAX_CONCURRENCY
from serving.container import MODEL_ROOT, VLLM_PORT
from serving.route_guard import env_problem
from stacks.base import SettingsModel
from stacks.bounds import MAX_INSTANCES, MAX_MEMORY_GIB, MAX_POSIX_ID, MAX_VCPUS

# The startup window when modelLoadSeconds is unset and the checkpoint's size is unknown (no built-in
# profile, no capacity.weightBytes): the default this setting had before the window was derived.
DEFAULT_MODEL_LOAD_SECONDS = 1200
# Source: https://cloud.google.com/run/docs/reference/rest/v2/Container#probe (startup/liveness probes:
# initialDelaySeconds 0-240, periodSeconds 1-240, timeoutSeconds 1-240 and smaller than periodSeconds).
PROBE_MAX_SECONDS = 240
# Source: https://cloud.google.com/run/docs/configuring/request-timeout (at most 60 minutes).
MAX_REQUEST_TIMEOUT_SECONDS = 3600

_MEMBER = re.compile(r"^(user|serviceAccount|group|domain|principal|principalSet):\S+$")
_PUBLIC_MEMBERS = frozenset({"allUsers", "allAuthenticatedUsers"})
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Environment names that carry credentials: those belong in Secret Manager, never in plain env values.
_SECRET_LOOKING_ENV = re.compile(r"(TOKEN|SECRET|PASSWORD|API_KEY|APIKEY|PRIVATE_KEY)", re.IGNORECASE)
_MOUNT_OPTION = re.compile(r"^[a-z][a-z0-9-]*(=[^;\s]+)?$")
# Source: https://cloud.google.com/run/docs/reference/rest/v2/projects.locations.services.revisions (a
# revision name is a DNS label: lowercase letters, digits and hyphens, at most 63 characters).
_REVISION_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


class ProbeSettings(SettingsModel):
    """An HTTP probe on vLLM's /health, in Cloud Run's units and ranges."""

    initial_delay_seconds: int = Field(default=0, ge=0, le=PROBE_MAX_SECONDS)
    period_seconds: int = Field(default=10, ge=1, le=PROBE_MAX_SECONDS)
    timeout_seconds: int = Field(default=5, ge=1, le=PROBE_MAX_SECONDS)
    # Unset for the startup probe: derived from the model load (cloudRun.modelLoadSeconds or the estimate).
    failure_threshold: int | None = Field(default=None, ge=1, le=GPU_STARTUP_PROBE_MAX_SECONDS)

    @model_validator(mode="after")
    def _timeout_within_period(self) -> Self:
        if self.timeout_seconds >= self.period_seconds:
            raise ValueError(
                f"timeoutSeconds ({self.timeout_seconds}) must be smaller than periodSeconds ({self.period_seconds}): "
                f"Cloud Run rejects such a probe; allowed: 1-{self.period_seconds - 1}"
            )
        return self

    def window_seconds(self, failure_threshold: int) -> int:
        """How long the container gets before Cloud Run gives up on it."""
        return self.initial_delay_seconds + self.period_seconds * failure_threshold


def plain_env(env: dict[str, str], *, key: str = "") -> dict[str, str]:
    """The serving container's env as a stack file writes it: valid names, nothing named like a credential (a
    Cloud Run revision's and a Kubernetes manifest's env are readable by anyone who may view them), and none of
    the variables that change vLLM's routes, auth or adapter loading (serving/guard_runtime.py)."""
    where = f"{key}: " if key else ""
    for name in env:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{where}{name!r} is not a valid environment variable name")
        if _SECRET_LOOKING_ENV.search(name):
            raise ValueError(
                f"{where}{name!r} looks like a credential: plain env values are visible to every project viewer; "
                "keep it in Secret Manager (docs/deploying.md, 'Secrets')"
            )
        problem = env_problem(name, key or "env")
        if problem:
            raise ValueError(problem)
    return env


class GcsMountSettings(SettingsModel):
    """How the model bucket is mounted through Cloud Storage FUSE."""

    mount_path: str = MODEL_ROOT
    # The hand-made deployments' container user; upstream's vllm-openai image runs as root by default and
    # its optional non-root user is uid 2000 gid 0, so both stay configurable.
    uid: int = Field(default=1001, ge=0, le=MAX_POSIX_ID)
    gid: int = Field(default=1001, ge=0, le=MAX_POSIX_ID)
    # Further gcsfuse flags without leading dashes, e.g. implicit-dirs, metadata-cache-ttl-secs=-1.
    extra_options: tuple[str, ...] = ()

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or value == "/":
            raise ValueError(f"{value!r} must be an absolute directory path such as {MODEL_ROOT}")
        return value.rstrip("/")

    @field_validator("extra_options")
    @classmethod
    def _gcsfuse_flags(cls, options: tuple[str, ...]) -> tuple[str, ...]:
        for option in options:
            if option.startswith("-") or not _MOUNT_OPTION.match(option):
                raise ValueError(
                    f"{option!r} is not a gcsfuse mount option; write flags without dashes, one per item "
                    "(e.g. implicit-dirs, metadata-cache-ttl-secs=-1)"
                )
            if option.split("=", 1)[0] in {"uid", "gid"}:
                raise ValueError(f"{option!r}: set uid/gid through the mount block's uid and gid keys")
        return options

    def mount_options(self) -> list[str]:
        return [*self.owner_options(), *self.extra_options]

    def owner_options(self) -> tuple[str, str]:
        """uid=/gid=: who owns the mounted files in the container (the compile-cache volume uses them too)."""
        return f"uid={self.uid}", f"gid={self.gid}"


class TrafficSettings(SettingsModel):
    """The traffic split of a gated rollout, written by `gemma-verify promote` for one `pulumi up`.

    Not for hand editing: promotion sets these keys, runs `pulumi up` and removes them again; the stack's
    outputs (`servingRevision`, `previousRevision`) carry the split into the next update. Unset keys mean
    "as the stack's state says".
    """

    # The revision that serves (100 - candidatePercent)% of the traffic.
    serving_revision: str | None = None
    # The revision `verify promote --rollback` returns to.
    previous_revision: str | None = None
    # The candidate's share during a stepped promotion (10 -> 50 -> ...); promotion to 100% names the
    # candidate as servingRevision instead.
    candidate_percent: int = Field(default=0, ge=0, le=99)
    # The id of the promotion that wrote these keys. The program obeys them only in the `pulumi up` that
    # promotion itself runs (it passes the same id in GEMMA_PROMOTION_RUN, deploy/rollout_state.py): keys
    # left behind by a killed promotion are inert for every later plain `pulumi up`.
    promotion_run: str | None = Field(default=None, pattern=r"^[0-9a-f]{16,64}$")

    @field_validator("serving_revision", "previous_revision")
    @classmethod
    def _revision_name(cls, value: str | None) -> str | None:
        if value is not None and not _REVISION_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a Cloud Run revision name (lowercase letters, digits and hyphens, starting with "
                "a letter, at most 63 characters)"
            )
        return value


class CloudRunSettings(SettingsModel):
    """The Cloud Run service that hosts one vLLM server per GPU instance."""

    cpu: int = Field(ge=1, le=MAX_VCPUS)
    memory_gib: int = Field(ge=1, le=MAX_MEMORY_GIB)
    # Requests one instance admits at once; unset means vllm.maxNumSeqs, so Cloud Run never caps the batch.
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    min_instances: int = Field(default=0, ge=0, le=MAX_INSTANCES)
    max_instances: int = Field(default=1, ge=1, le=MAX_INSTANCES)
    request_timeout_seconds: int = Field(default=MAX_REQUEST_TIMEOUT_SECONDS, ge=1, le=MAX_REQUEST_TIMEOUT_SECONDS)
    # The time a cold instance needs to load the model and answer /health; the startup probe covers it.
    # Unset: derived from the checkpoint's bytes and model.load's read throughput (serving/cold_start.py),
    # or DEFAULT_MODEL_LOAD_SECONDS when the checkpoint's size is unknown.
    model_load_seconds: int | None = Field(default=None, ge=30, le=7200)
    # The cold start `verify promote` accepts for a candidate (instance start to first passing probe, as
    # `verify status` measures it); unset: no cold-start gate.
    max_cold_start_seconds: int | None = Field(default=None, ge=1, le=7200)
    startup_probe: ProbeSettings = ProbeSettings(initial_delay_seconds=30, period_seconds=10, timeout_seconds=5)
    liveness_probe: ProbeSettings = ProbeSettings(period_seconds=30, timeout_seconds=10, failure_threshold=3)
    ingress: Literal["all", "internal", "internal-and-cloud-load-balancing"] = "all"
    # Who may call the service (IAM members); never allUsers/allAuthenticatedUsers.
    invokers: tuple[str, ...] = ()
    # Cloud Run's default (zonal redundancy on) draws on a GPU quota projects rarely have.
    gpu_zonal_redundancy_disabled: bool = True
    env: dict[str, str] = Field(default_factory=dict)
    mount: GcsMountSettings = GcsMountSettings()
    port: int = Field(default=VLLM_PORT, ge=1, le=65535)
    deletion_protection: bool = False
    # gated: `pulumi up` creates each new revision under the `candidate` tag with 0% of the traffic and
    # `gemma-verify promote` moves traffic to it once it passed health and bench; direct: every
    # `pulumi up` sends all traffic to the new revision (as soon as it is ready).
    rollout: Literal["gated", "direct"] = "gated"
    traffic: TrafficSettings = TrafficSettings()

    @field_validator("invokers")
    @classmethod
    def _private_invokers(cls, members: tuple[str, ...]) -> tuple[str, ...]:
        for member in members:
            if member in _PUBLIC_MEMBERS:
                raise ValueError(
                    f"{member!r} would make the service public; name users, groups or service accounts "
                    "(user:…, group:…, serviceAccount:…, domain:…)"
                )
            if not _MEMBER.match(member):
                raise ValueError(
                    f"{member!r} is not an IAM member; write user:…, group:…, serviceAccount:…, domain:… "
                    "or principal://…"
                )
        return members

    @field_validator("env")
    @classmethod
    def _plain_env(cls, env: dict[str, str]) -> dict[str, str]:
        return plain_env(env, key="cloudRun.env")

    @model_validator(mode="after")
    def _traffic_needs_gated_rollout(self) -> Self:
        if self.rollout == "direct" and self.traffic != TrafficSettings():
            raise ValueError(
                "cloudRun.traffic is the traffic split of a gated rollout (written by `gemma-verify promote`); "
                "with cloudRun.rollout: direct every revision takes all traffic, so remove cloudRun.traffic"
            )
        return self

    @model_validator(mode="after")
    def _instances(self) -> Self:
        if self.max_instances < self.min_instances:
            raise ValueError(
                f"cloudRun.maxInstances ({self.max_instances}) must be at least cloudRun.minInstances "
                f"({self.min_instances})"
            )
        threshold = self.startup_probe.failure_threshold
        load = self.model_load_seconds
        if threshold is not None and load is not None and self.startup_probe.window_seconds(threshold) < load:
            raise ValueError(
                f"cloudRun.startupProbe gives the container {self.startup_probe.window_seconds(threshold)} s "
                f"(initialDelaySeconds + periodSeconds x failureThreshold) but cloudRun.modelLoadSeconds is "
                f"{self.model_load_seconds} s: Cloud Run would kill the instance mid-load; leave failureThreshold "
                "unset to size it from modelLoadSeconds"
            )
        return self

    def load_seconds(self, derived: int | None = None) -> int:
        """The window the startup probe covers: modelLoadSeconds, else the derived estimate, else the default."""
        if self.model_load_seconds is not None:
            return self.model_load_seconds
        return derived if derived is not None else DEFAULT_MODEL_LOAD_SECONDS

    def startup_failure_threshold(self, derived: int | None = None) -> int:
        """The startup probe's threshold: explicit, or just enough to cover the model load."""
        if self.startup_probe.failure_threshold is not None:
            return self.startup_probe.failure_threshold
        remaining = max(self.load_seconds(derived) - self.startup_probe.initial_delay_seconds, 0)
        return max(1, math.ceil(remaining / self.startup_probe.period_seconds))

    def liveness_failure_threshold(self) -> int:
        return self.liveness_probe.failure_threshold or 3
