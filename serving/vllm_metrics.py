"""The metrics vLLM really exports, as recorded from a real server into `serving/data/vllm-0.32-metrics.json`.

Why: every dashboard panel and alert names vLLM metrics by hand, and vLLM has renamed them before
(`vllm:gpu_cache_usage_perc` became `vllm:kv_cache_usage_perc`, silently emptying other projects'
dashboards). The tests check each name against this record, and `verify promote` checks a candidate's
live `/metrics` against the names the stack's panels and alerts use; re-record the file
(`serving/data/record_vllm_metrics.py`) when the pinned vLLM image moves to another release.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

RECORDED_FILE = "vllm-0.32-metrics.json"


@dataclass(frozen=True)
class MetricFamily:
    """One exported family: its Prometheus type, the sample names it writes and their labels."""

    name: str
    type: str
    samples: tuple[str, ...]
    labels: tuple[str, ...]
    # Histogram bucket upper bounds (without +Inf); empty for other types.
    buckets: tuple[float, ...]
    # Which recorded servers exported it (`ngram-spec-decode` only: a speculative-decoding family).
    servers: tuple[str, ...]


@dataclass(frozen=True)
class RecordedMetrics:
    """What one vLLM release exports, with the release and how it was recorded."""

    release: str
    source: str
    families: dict[str, MetricFamily]

    @functools.cached_property
    def sample_names(self) -> frozenset[str]:
        """Every name a PromQL selector may use (`vllm:prompt_tokens_total`, `..._bucket`, ...)."""
        return frozenset(sample for family in self.families.values() for sample in family.samples)

    def family_of(self, sample: str) -> MetricFamily | None:
        return next((family for family in self.families.values() if sample in family.samples), None)

    def buckets(self, histogram: str) -> tuple[float, ...]:
        """The bucket bounds of a histogram family (named without `_bucket`); empty when there is none."""
        family = self.families.get(histogram)
        return family.buckets if family is not None else ()


@functools.cache
def recorded_metrics() -> RecordedMetrics:
    raw = json.loads(resources.files("serving.data").joinpath(RECORDED_FILE).read_text(encoding="utf-8"))
    families = {
        name: MetricFamily(
            name=name,
            type=entry["type"],
            samples=tuple(entry["samples"]),
            labels=tuple(entry["labels"]),
            buckets=tuple(entry.get("buckets", ())),
            servers=tuple(entry["servers"]),
        )
        for name, entry in raw["families"].items()
    }
    return RecordedMetrics(release=raw["vllm_version"], source=raw["_source"], families=families)
