"""A workload description in a file (`--workload FILE`, YAML): the traffic a team keeps in its repository.

Why: traffic arrives as users who think between requests, as sessions whose history the prefix cache reuses, as a
mixture of request kinds sharing one deployment, behind one shared system prompt, some of it for LoRA adapters; "10
developers" typed as `--users 10` became 10 requests always in flight and four GPUs. One file says all of it, and
advise (CLI and MCP tool) reads it through this one model into the same options its flags make:

    requests:                      # the kinds of request, each with its share (one kind: share 1)
      - {prompt_tokens: 1500, output_tokens: 300, share: 0.8}
      - {prompt_tokens: 6000, output_tokens: 800, share: 0.2}
    system_prompt_tokens: 2000     # sent first in every request, the same for all: the prefix cache serves it
    users: 10                      # or rate: requests/s, or batch: {requests: N, within_hours: H}
    think_time_s: 30               # between a user's answer and their next request
    sessions: {turns: 6}           # each user's conversation: its history is resent, and reused, every turn
    slo: {p95_ttft_ms: 2000}
    adapters: {count: 3, rank: 16, share: 0.5}

A session of N turns resends its history: turn k's prompt is the system prompt, the k-1 turns before (each a
prompt and its answer) and the new prompt, so a request's prompt is on average the new one plus the system prompt
plus (N-1)/2 turns, of which all but the new prompt is reused; the cache must keep one history per user. The
longest request (the last turn) is what the KV cache must hold.
"""

from __future__ import annotations

from pathlib import Path

import pydantic
import yaml

from verify import UsageError
from verify.advise.adapter_fit import AdapterWorkload
from verify.advise.options import SLO_KEYS, AdviseOptions, LengthClass, Slo

# The last turn of a session rides as a class of this weight: it sizes max-model-len and the KV cache's requests
# without moving the mean or the p95 prompt.
LONGEST_WEIGHT = 1e-6


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class RequestKind(_Model):
    """One kind of request: its new prompt tokens (without the system prompt or history), output, share."""

    prompt_tokens: int = pydantic.Field(ge=1)
    output_tokens: int = pydantic.Field(ge=1)
    share: float = pydantic.Field(default=1.0, gt=0)


class Sessions(_Model):
    """Conversations of ``turns`` requests each, their history resent (and reused) every turn."""

    turns: int = pydantic.Field(ge=1, le=1000)


class Batch(_Model):
    requests: int = pydantic.Field(ge=1)
    within_hours: float = pydantic.Field(gt=0)
    runs_per_month: float = pydantic.Field(default=30.0, gt=0)


class Workload(_Model):
    """The traffic: the request kinds, a shared system prompt, sessions, the load, think time, SLO and adapters."""

    requests: tuple[RequestKind, ...] = pydantic.Field(min_length=1)
    system_prompt_tokens: int = pydantic.Field(default=0, ge=0)
    sessions: Sessions | None = None
    users: int | None = pydantic.Field(default=None, ge=1)
    rate: float | None = pydantic.Field(default=None, gt=0)
    batch: Batch | None = None
    think_time_s: float = pydantic.Field(default=0.0, ge=0)
    slo: dict[str, float] = pydantic.Field(default_factory=dict)
    adapters: AdapterWorkload | None = None

    @pydantic.model_validator(mode="after")
    def _one_load(self) -> Workload:
        given = [name for name in ("users", "rate", "batch") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"state the load once: users, rate or batch (given: {', '.join(given) or 'none'})")
        if self.think_time_s and self.users is None:
            raise ValueError("think_time_s needs users: a rate or a batch already says when requests arrive")
        unknown = sorted(set(self.slo) - set(SLO_KEYS))
        if unknown:
            raise ValueError(f"slo key {unknown[0]!r}: allowed: {', '.join(SLO_KEYS)}")
        if self.sessions is not None and self.users is None:
            raise ValueError("sessions need users: each user's conversation is one session")
        return self

    def options_values(self) -> dict[str, object]:
        """The values `AdviseOptions` takes for this workload: the request classes as a length distribution (the
        system prompt and the mean history added to each), the reuse, the load, think time, SLO and adapters."""
        total = sum(kind.share for kind in self.requests)
        mean_turn = sum((k.prompt_tokens + k.output_tokens) * k.share for k in self.requests) / total
        earlier = (self.sessions.turns - 1) if self.sessions is not None else 0
        history = round(earlier / 2 * mean_turn)
        shared = self.system_prompt_tokens + history
        lengths = [(k.prompt_tokens + shared, k.output_tokens, k.share) for k in self.requests]
        if earlier:
            longest = max(self.requests, key=lambda k: k.prompt_tokens + k.output_tokens)
            last_turn = self.system_prompt_tokens + round(earlier * mean_turn) + longest.prompt_tokens
            lengths.append((last_turn, longest.output_tokens, LONGEST_WEIGHT * total))
        values: dict[str, object] = {
            "lengths": lengths,
            "reused_tokens": shared,
            # Per-user histories are as many prefixes as users; one shared system prompt is one.
            "distinct_prefixes": self.users if earlier and self.users else 1,
            "users": self.users,
            "rate": self.rate,
            "think_time_s": self.think_time_s,
            "slo": self.slo,
            "adapters": self.adapters,
        }
        if self.batch is not None:
            values |= {
                "batch_requests": self.batch.requests,
                "within_hours": self.batch.within_hours,
                "runs_per_month": self.batch.runs_per_month,
            }
        return values


def load_workload(path: Path) -> Workload:
    """The workload file, checked; UsageError naming the file and what is wrong."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"--workload {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise UsageError(f"--workload {path}: not YAML: {error}") from None
    try:
        return Workload.model_validate(raw)
    except pydantic.ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg']}" for e in error.errors())
        raise UsageError(f"--workload {path}: {problems}") from None


def workload_options(workload: Workload, **constraints: object) -> AdviseOptions:
    """The options for ``workload`` with the constraints (platforms, models, top, ...) the caller adds; UsageError
    naming what is wrong (a misspelt SLO key among them)."""
    values = workload.options_values()
    lengths = tuple(
        LengthClass(prompt_tokens=p, output_tokens=o, weight=w)
        for p, o, w in values.pop("lengths")  # type: ignore[attr-defined]
    )
    try:
        values["slo"] = Slo.model_validate(values["slo"])
        return AdviseOptions.with_lengths(lengths, **{**constraints, **values})
    except pydantic.ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'workload'}: {e['msg']}" for e in error.errors())
        raise UsageError(f"workload: {problems}") from None
