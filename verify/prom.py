"""vLLM's ``/metrics`` (Prometheus text) reduced to the few numbers that explain a deployment's state.

Parsed with prometheus_client's own parser, which knows the exposition format's escaping, label
quoting and ``_total``/``_created`` suffixes: a hand-written regex gets those subtly wrong.

Aggregation across engines (data-parallel servers export one series per ``engine`` label): request
counts and counters are summed; KV-cache usage takes the fullest engine, since the fullest one is
the one that preempts. Counters are totals since the server started; ``since`` turns two snapshots
into the change between them (what a benchmark run caused).
"""

from __future__ import annotations

from collections import defaultdict

import pydantic
from prometheus_client.parser import text_string_to_metric_families

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
PREEMPTIONS = "vllm:num_preemptions_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens_total"


class MetricsParseError(ValueError):
    """The body is not Prometheus text (e.g. an HTML error page from a proxy)."""


class VllmMetrics(pydantic.BaseModel):
    """One scrape. Fields are None when the server does not export the series at all."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    model_names: tuple[str, ...]
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None  # 0..1
    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    preemptions: float | None
    prompt_tokens: float | None
    generation_tokens: float | None
    spec_decode_drafts: float | None
    spec_decode_draft_tokens: float | None
    spec_decode_accepted_tokens: float | None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def prefix_cache_hit_rate(self) -> float | None:
        return _ratio(self.prefix_cache_hits, self.prefix_cache_queries)

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def spec_decode_acceptance_rate(self) -> float | None:
        """Accepted / proposed draft tokens, vLLM's definition; None without speculative decoding."""
        return _ratio(self.spec_decode_accepted_tokens, self.spec_decode_draft_tokens)

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def spec_decode_mean_acceptance_length(self) -> float | None:
        """Tokens emitted per verification step: 1 (the target's own token) + accepted per draft."""
        per_draft = _ratio(self.spec_decode_accepted_tokens, self.spec_decode_drafts)
        return None if per_draft is None else 1.0 + per_draft

    @property
    def spec_decode_enabled(self) -> bool:
        return self.spec_decode_draft_tokens is not None

    @property
    def is_vllm(self) -> bool:
        """Whether this looks like a vLLM server's metrics at all."""
        return self.running is not None

    def since(self, earlier: VllmMetrics) -> VllmMetrics:
        """Counters as the change from ``earlier`` to this scrape; gauges as of this scrape."""
        return self.model_copy(
            update={
                name: _delta(getattr(self, name), getattr(earlier, name))
                for name in (
                    "prefix_cache_queries",
                    "prefix_cache_hits",
                    "preemptions",
                    "prompt_tokens",
                    "generation_tokens",
                    "spec_decode_drafts",
                    "spec_decode_draft_tokens",
                    "spec_decode_accepted_tokens",
                )
            }
        )


def parse_metrics(text: str, *, model: str | None = None) -> VllmMetrics:
    """Summarise a ``/metrics`` body; with ``model``, only series labelled with that served name
    count (when the server labels any series with it)."""
    samples = _samples_by_name(text)
    names = sorted(
        {labels["model_name"] for series in samples.values() for labels, _ in series if "model_name" in labels}
    )

    def values(name: str) -> list[float] | None:
        series = samples.get(name)
        if series is None:
            return None
        if model is not None and model in names:
            series = [(labels, value) for labels, value in series if labels.get("model_name", model) == model]
        return [value for _, value in series]

    def total(name: str) -> float | None:
        found = values(name)
        return None if found is None else sum(found)

    def fullest(name: str) -> float | None:
        found = values(name)
        return max(found) if found else None

    return VllmMetrics(
        model_names=tuple(names),
        running=total(RUNNING),
        waiting=total(WAITING),
        kv_cache_usage=fullest(KV_CACHE_USAGE),
        prefix_cache_queries=total(PREFIX_CACHE_QUERIES),
        prefix_cache_hits=total(PREFIX_CACHE_HITS),
        preemptions=total(PREEMPTIONS),
        prompt_tokens=total(PROMPT_TOKENS),
        generation_tokens=total(GENERATION_TOKENS),
        spec_decode_drafts=total(SPEC_DRAFTS),
        spec_decode_draft_tokens=total(SPEC_DRAFT_TOKENS),
        spec_decode_accepted_tokens=total(SPEC_ACCEPTED_TOKENS),
    )


Samples = dict[str, list[tuple[dict[str, str], float]]]


def samples_by_name(text: str) -> Samples:
    """Every sample of a ``/metrics`` body by its full name (``..._total``, ``..._bucket``) with its labels."""
    return _samples_by_name(text)


def _samples_by_name(text: str) -> Samples:
    by_name: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                by_name[str(sample.name)].append((dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError) as exc:
        raise MetricsParseError(f"not Prometheus text: {exc}") from None
    return dict(by_name)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _delta(later: float | None, earlier: float | None) -> float | None:
    if later is None:
        return None
    # A counter that went down means the server restarted in between: its value is all we know.
    if earlier is None or later < earlier:
        return later
    return later - earlier
