"""What `advise` is asked: the workload, the load, the SLO and the constraints, validated once."""

from __future__ import annotations

from typing import Self

import pydantic

from verify import UsageError

HOURS_PER_MONTH = 730.0
PLATFORMS = ("cloud-run", "tpu")
PROVISIONING = ("on-demand", "spot", "flex-start")
SLO_KEYS = ("p95_ttft_ms", "p95_tpot_ms", "goodput")


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class Slo(_Model):
    """Upper bounds on p95 TTFT and TPOT (ms), and a lower bound on goodput: requests/s meeting both."""

    p95_ttft_ms: float | None = pydantic.Field(default=None, gt=0)
    p95_tpot_ms: float | None = pydantic.Field(default=None, gt=0)
    goodput: float | None = pydantic.Field(default=None, gt=0)

    def describe(self) -> str:
        parts = [
            f"p95 TTFT <= {self.p95_ttft_ms:g} ms" if self.p95_ttft_ms else "",
            f"p95 TPOT <= {self.p95_tpot_ms:g} ms" if self.p95_tpot_ms else "",
            f"goodput >= {self.goodput:g} req/s" if self.goodput else "",
        ]
        return ", ".join(part for part in parts if part) or "no SLO (every row meets it)"


def parse_slo(texts: list[str]) -> Slo:
    """``--slo p95_ttft_ms=2000`` (repeatable); UsageError naming the allowed keys."""
    values: dict[str, float] = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or key not in SLO_KEYS:
            raise UsageError(f"--slo {text!r}: expected KEY=VALUE with KEY one of {', '.join(SLO_KEYS)}")
        try:
            values[key] = float(raw)
        except ValueError:
            raise UsageError(f"--slo {text!r}: {raw!r} is not a number") from None
        if not values[key] > 0:
            raise UsageError(f"--slo {text!r}: the value must be positive")
    return Slo(**values)


class AdviseOptions(_Model):
    """The workload (tokens per request), the load (concurrent users in a closed loop, or a request rate),
    the SLO, and the constraints; empty filters mean everything the catalog and the shapes offer."""

    prompt_tokens: int = pydantic.Field(ge=1)
    output_tokens: int = pydantic.Field(ge=1)
    users: int | None = pydantic.Field(default=None, ge=1)
    rate: float | None = pydantic.Field(default=None, gt=0)
    slo: Slo = Slo()
    platforms: tuple[str, ...] = ()
    region: str | None = None
    provisioning: tuple[str, ...] = ("on-demand",)
    models: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    budget_usd_per_month: float | None = pydantic.Field(default=None, gt=0)
    active_hours_per_month: float = pydantic.Field(default=HOURS_PER_MONTH, gt=0, le=HOURS_PER_MONTH)
    max_replicas: int = pydantic.Field(default=16, ge=1, le=1000)
    kv_cache_dtype: str = "fp8"
    top: int = pydantic.Field(default=10, ge=1)

    @pydantic.model_validator(mode="after")
    def _one_load(self) -> Self:
        if (self.users is None) == (self.rate is None):
            raise ValueError("state the load once: --users N or --rate R")
        unknown = [p for p in self.platforms if p not in PLATFORMS]
        if unknown:
            raise ValueError(f"--platform {unknown[0]!r}: allowed: {', '.join(PLATFORMS)}")
        wrong = [p for p in self.provisioning if p not in PROVISIONING]
        if wrong:
            raise ValueError(f"provisioning {wrong[0]!r}: allowed: {', '.join(PROVISIONING)}")
        return self

    def describe_load(self) -> str:
        if self.users is not None:
            return f"{self.users} concurrent users (closed loop)"
        return f"{self.rate:g} requests/s (Poisson arrivals)"
