"""What `advise` is asked: the workload, the load, the SLO and the constraints, validated once."""

from __future__ import annotations

from typing import Self

import pydantic

from serving.quality import quality_book
from serving.workload_choices import context_problem, kv_cache_dtype_problem, model_problems, variant_problems
from verify import UsageError
from verify.advise.adapter_fit import AdapterWorkload

HOURS_PER_MONTH = 730.0
PLATFORMS = ("cloud-run", "tpu", "gke")
PROVISIONING = ("on-demand", "spot", "flex-start")
SLO_KEYS = ("p95_ttft_ms", "p95_tpot_ms", "goodput")
# The longest MTP draft advise weighs: the upper end of upstream's recommended 4-8 (vllm-project/recipes Gemma 4).
MAX_DRAFT_TOKENS = 8


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


# What advise assumes when no SLO is stated: a reply that starts within 10 s, the longest a chat or an API caller
# commonly waits (a usable answer, not a target; the note says it was assumed).
ASSUMED_SLO = Slo(p95_ttft_ms=10_000)


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


class LengthClass(_Model):
    """One kind of request in a length distribution: its prompt and output tokens and its share of requests."""

    prompt_tokens: int = pydantic.Field(ge=1)
    output_tokens: int = pydantic.Field(ge=1)
    weight: float = pydantic.Field(gt=0)


def parse_lengths(text: str) -> tuple[LengthClass, ...]:
    """``--lengths 2048:256:0.7,8192:512:0.3`` (prompt:output:share, shares need not add up to 1)."""
    classes = []
    for part in text.split(","):
        fields = part.strip().split(":")
        try:
            prompt, output, weight = (float(field) for field in fields)
            classes.append(LengthClass(prompt_tokens=int(prompt), output_tokens=int(output), weight=weight))
        except (ValueError, pydantic.ValidationError):
            raise UsageError(
                f"--lengths {part.strip()!r}: expected PROMPT:OUTPUT:SHARE with positive numbers, e.g. 2048:256:0.7"
            ) from None
    return tuple(classes)


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
    # A length distribution; prompt_tokens and output_tokens are then its weighted means.
    lengths: tuple[LengthClass, ...] = ()
    # Prefix reuse: how many of each prompt's tokens another request already sent (a shared system prompt, the
    # conversation so far), and how many such prefixes are in play at once (their KV is what the cache must keep).
    # 0 for unknown traffic: every prompt prefilled cold.
    reused_tokens: int = pydantic.Field(default=0, ge=0)
    distinct_prefixes: int = pydantic.Field(default=1, ge=1)
    # MTP speculative decoding as candidates: the draft lengths to weigh where the catalog has a drafter (0: off).
    draft_tokens: tuple[int, ...] = (0, 2, 4)
    # LoRA adapters every deployment must serve (verify/advise/adapter_fit.py); None: the base model only.
    adapters: AdapterWorkload | None = None
    # The peak the written stack's autoscaler allows for, as a multiple of the stated load (its max replicas).
    peak_factor: float = pydantic.Field(default=2.0, ge=1, le=100)
    # Closed-loop users read each answer this long before their next request (verify/advise/think_time.py).
    think_time_s: float = pydantic.Field(default=0.0, ge=0)
    # Quality floors (benchmark key, least score: serving/data/model-quality.json) and a ranking across models
    # asked for outright; either, or a list of models, turns the per-model answer into one ranking.
    min_scores: tuple[tuple[str, float], ...] = ()
    one_ranking: bool = False
    # A batch job: this many requests to finish within this many hours, this many runs a month (30: nightly).
    # The load is then the rate that finishes in time, and each row is priced for the hours its job runs.
    batch_requests: int | None = pydantic.Field(default=None, ge=1)
    within_hours: float | None = pydantic.Field(default=None, gt=0)
    runs_per_month: float = pydantic.Field(default=30.0, gt=0, le=HOURS_PER_MONTH)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _batch_rate(cls, data: object) -> object:
        """A batch's load is the rate that finishes it in time (the rows then find the fewest replicas for it)."""
        if not isinstance(data, dict) or data.get("batch_requests") is None:
            return data
        if data.get("users") is not None or data.get("rate") is not None:
            raise ValueError("--batch states the load: give no --users or --rate with it")
        hours = data.get("within_hours")
        if not isinstance(hours, int | float) or hours <= 0:
            raise ValueError("--batch needs --within HOURS (a positive number): the time the job must finish in")
        requests = data["batch_requests"]
        if not isinstance(requests, int) or requests < 1:
            raise ValueError("--batch REQUESTS: a positive whole number")
        return {**data, "rate": requests / (hours * 3600)}

    @property
    def is_batch(self) -> bool:
        return self.batch_requests is not None

    @property
    def slo_assumed(self) -> bool:
        """Whether the user stated no SLO: every load then gets ``ASSUMED_SLO`` (10^12 users once got one replica
        at a predicted p95 TTFT of 23,000 years, "meeting" an SLO nobody stated)."""
        return self.slo == Slo() and not self.is_batch

    @property
    def effective_slo(self) -> Slo:
        return ASSUMED_SLO if self.slo_assumed else self.slo

    def describe_slo(self) -> str:
        if self.is_batch and self.slo == Slo():
            return "no latency SLO: each row must finish the batch in time"
        if self.slo_assumed:
            return f"none given, assumed {ASSUMED_SLO.describe()}"
        return self.slo.describe()

    @property
    def per_model(self) -> bool:
        """Whether the answer is the cheapest deployment of each model, best model first (the default: the user sees
        the price of quality), rather than one ranking cheapest first."""
        return not (self.one_ranking or self.models or self.min_scores)

    @classmethod
    def with_lengths(cls, lengths: tuple[LengthClass, ...], **values: object) -> AdviseOptions:
        """Options for a length distribution: the mean prompt and output tokens, and the classes."""
        total = sum(c.weight for c in lengths)
        prompt = round(sum(c.prompt_tokens * c.weight for c in lengths) / total)
        output = round(sum(c.output_tokens * c.weight for c in lengths) / total)
        return cls.model_validate({**values, "prompt_tokens": prompt, "output_tokens": output, "lengths": lengths})

    @property
    def longest(self) -> tuple[int, int]:
        """(prompt, output) of the longest request: what max-model-len and the KV cache must hold."""
        if not self.lengths:
            return self.prompt_tokens, self.output_tokens
        longest = max(self.lengths, key=lambda c: c.prompt_tokens + c.output_tokens)
        return longest.prompt_tokens, longest.output_tokens

    @property
    def p95_prompt_tokens(self) -> int:
        """The prompt length 95 % of requests are at or below (the mean without a distribution)."""
        if not self.lengths:
            return self.prompt_tokens
        total = sum(c.weight for c in self.lengths)
        seen = 0.0
        for length in sorted(self.lengths, key=lambda c: c.prompt_tokens):
            seen += length.weight
            if seen >= 0.95 * total:
                return length.prompt_tokens
        return max(c.prompt_tokens for c in self.lengths)

    def describe_workload(self) -> str:
        reuse = (
            f", {self.reused_tokens:,} of each prompt's tokens reused ({self.distinct_prefixes} distinct prefixes)"
            if self.reused_tokens
            else ""
        )
        adapters = f", {self.adapters.describe()}" if self.adapters is not None else ""
        return self._describe_lengths() + reuse + adapters

    def _describe_lengths(self) -> str:
        if not self.lengths:
            return f"{self.prompt_tokens:,} prompt + {self.output_tokens:,} output tokens a request"
        total = sum(c.weight for c in self.lengths)
        classes = ", ".join(f"{c.prompt_tokens:,}+{c.output_tokens:,} ({c.weight / total:.0%})" for c in self.lengths)
        return (
            f"requests of {classes}: mean {self.prompt_tokens:,} prompt + {self.output_tokens:,} output tokens, "
            f"p95 prompt {self.p95_prompt_tokens:,}"
        )

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
        if self.reused_tokens > self.prompt_tokens:
            raise ValueError(
                f"--reused-tokens {self.reused_tokens}: at most the prompt's {self.prompt_tokens} tokens (a request "
                "cannot reuse more than it sends)"
            )
        benchmarks = quality_book().benchmarks
        unknown_floor = [key for key, _ in self.min_scores if key not in benchmarks]
        if unknown_floor:
            raise ValueError(f"min score {unknown_floor[0]!r}: allowed benchmarks: {', '.join(benchmarks)}")
        if not self.draft_tokens or any(not 0 <= k <= MAX_DRAFT_TOKENS for k in self.draft_tokens):
            raise ValueError(f"--draft-tokens: each between 0 (MTP off) and {MAX_DRAFT_TOKENS}")
        return self

    @pydantic.model_validator(mode="after")
    def _known_choices(self) -> Self:
        """A model, variant or KV-cache dtype the catalog and the planner do not know, or a request longer than any
        model asked takes, is a usage error naming the flag (serving/workload_choices.py): it ranked nothing."""
        prompt, output = self.longest
        flag = "--lengths" if self.lengths else "--prompt-tokens"
        problems = [
            *model_problems(self.models),
            *variant_problems(self.models, self.variants),
            kv_cache_dtype_problem(self.kv_cache_dtype),
            context_problem(prompt, output, self.models, flag=flag),
        ]
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))
        return self

    def describe_load(self) -> str:
        if self.batch_requests is not None:
            return (
                f"a batch of {self.batch_requests:,} requests within {self.within_hours:g} h "
                f"({self.rate:.3g} requests/s at least), {self.runs_per_month:g} runs a month"
            )
        if self.users is not None and self.think_time_s:
            return f"{self.users} users (closed loop, {self.think_time_s:g} s think time between requests)"
        if self.users is not None:
            return f"{self.users} concurrent users (closed loop)"
        return f"{self.rate:g} requests/s (Poisson arrivals)"


def parse_min_scores(texts: list[str]) -> tuple[tuple[str, float], ...]:
    """``--min-score mmlu_pro=80`` (repeatable): UsageError naming the benchmarks the quality table has."""
    benchmarks = quality_book().benchmarks
    found: dict[str, float] = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or key not in benchmarks:
            raise UsageError(
                f"--min-score {text!r}: expected BENCHMARK=SCORE with BENCHMARK one of {', '.join(benchmarks)}"
            )
        try:
            found[key] = float(raw)
        except ValueError:
            raise UsageError(f"--min-score {text!r}: {raw!r} is not a number") from None
    return tuple(found.items())


def parse_hours(text: str) -> float:
    """``--within 6`` or ``6h``: hours, positive; UsageError naming the flag."""
    try:
        hours = float(text.strip().removesuffix("h"))
    except ValueError:
        raise UsageError(f"--within {text!r}: expected hours, e.g. 6 or 6h") from None
    if not hours > 0:
        raise UsageError(f"--within {text!r}: the hours must be positive")
    return hours


def parse_draft_tokens(text: str) -> tuple[int, ...]:
    """``--draft-tokens 0,2,4``: the MTP draft lengths to weigh (0 is MTP off); UsageError naming the flag."""
    try:
        found = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise UsageError(f"--draft-tokens {text!r}: expected comma-separated integers, e.g. 0,2,4") from None
    if not found or any(not 0 <= k <= MAX_DRAFT_TOKENS for k in found):
        raise UsageError(f"--draft-tokens {text!r}: each between 0 (MTP off) and {MAX_DRAFT_TOKENS}")
    return found
