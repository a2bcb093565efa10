"""``/metrics`` before and after a sweep: what the server itself saw while we measured.

Why: the client's numbers say how fast; the server's counters say why. A prefix-cache hit rate
above zero during a sweep means prompts were served from cache (ours are built not to be), and
preemptions or a speculative-decoding acceptance rate explain throughput that surprises.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pydantic

from verify.numbers import percent, readable
from verify.prom import MetricsParseError, VllmMetrics, parse_metrics


async def snapshot(client: httpx.AsyncClient, model: str) -> VllmMetrics | None:
    """One scrape of ``/metrics``; None when the endpoint has none (or not vLLM's)."""
    try:
        response = await client.get("/metrics")
    except httpx.HTTPError:
        return None
    if response.status_code != httpx.codes.OK:
        return None
    try:
        return parse_metrics(response.text, model=model)
    except MetricsParseError:
        return None


def draft_tokens_per_step(before: VllmMetrics | None, after: VllmMetrics | None) -> int | None:
    """The draft tokens each speculative step proposed between two scrapes, as the server's own counters say
    (``num_draft_tokens`` over ``num_drafts``: vLLM's ``num_speculative_tokens``); 0 when its metrics show no
    speculative decoding (vLLM registers those families only with a speculative config) or no draft was made;
    None when the metrics could not be read (not known)."""
    if before is None or after is None or not after.is_vllm:
        return None
    during = after.since(before)
    drafts, tokens = during.spec_decode_drafts, during.spec_decode_draft_tokens
    if not after.spec_decode_enabled or not drafts or tokens is None:
        return 0
    return round(tokens / drafts)


def summary_markdown(before: VllmMetrics | None, after: VllmMetrics | None) -> str | None:
    """The counters' change over the sweep and the gauges at its end, as a Markdown table."""
    if before is None or after is None:
        return None
    during = after.since(before)
    rows = [
        ("prompt tokens processed", readable(during.prompt_tokens)),
        ("generation tokens", readable(during.generation_tokens)),
        ("prefix-cache hit rate (should be ~0: prompts are unique)", percent(during.prefix_cache_hit_rate)),
        ("preemptions", readable(during.preemptions)),
        ("speculative decoding acceptance rate", percent(during.spec_decode_acceptance_rate)),
        ("speculative decoding mean acceptance length", readable(during.spec_decode_mean_acceptance_length)),
        ("requests running / waiting at the end", f"{readable(after.running)} / {readable(after.waiting)}"),
        ("KV-cache usage at the end", percent(after.kv_cache_usage)),
    ]
    lines = ["| during the sweep | value |", "| --- | ---: |"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def window_path(output: Path) -> Path:
    """Where a sweep's ``/metrics`` window goes: ``<results>.metrics.json``, or for a resumed sweep whose
    first window is there, the next free ``<results>.metrics-<n>.json`` (a window describes the cells
    measured in it: a resume never overwrites the earlier one)."""
    path = output.with_suffix(".metrics.json")
    number = 2
    while path.exists():
        path = output.with_name(f"{output.stem}.metrics-{number}.json")
        number += 1
    return path


def write_snapshots(path: Path, before: VllmMetrics | None, after: VllmMetrics | None) -> None:
    """``<results>.metrics.json``: both scrapes and their difference, for later digging."""
    document = {
        "before": None if before is None else before.model_dump(mode="json"),
        "after": None if after is None else after.model_dump(mode="json"),
        "during": None if before is None or after is None else after.since(before).model_dump(mode="json"),
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def load_snapshots(path: Path) -> tuple[VllmMetrics | None, VllmMetrics | None]:
    """Read back what ``write_snapshots`` wrote (computed ratios are recomputed, not read)."""
    if not path.exists():
        return None, None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return _side(document.get("before")), _side(document.get("after"))
    except (ValueError, AttributeError, pydantic.ValidationError):
        return None, None


def _side(raw: object) -> VllmMetrics | None:
    if not isinstance(raw, dict):
        return None
    return VllmMetrics.model_validate({key: raw.get(key) for key in VllmMetrics.model_fields})
