"""One read of vLLM's ``/metrics``, or two over a window, reduced to what explains a deployment's state.

A single read describes the server since it started (counters and histograms are cumulative); two reads
``window_s`` apart describe that window only (counters and histograms subtracted), while gauges
(running, waiting, KV-cache usage) are as of the last read. The report states which it is.

Speculative decoding, vLLM's definitions: acceptance rate = accepted / drafted tokens; mean acceptance
length = 1 + accepted / drafts (tokens per verification step); acceptance at position k = tokens
accepted at draft position k / drafts (position 0 is the first drafted token).
"""

from __future__ import annotations

import asyncio
import datetime
import math
from collections.abc import Awaitable, Callable

import httpx
import pydantic

from verify.metrics.histograms import Distribution, Histogram, UnreadableHistogramError, distribution, histogram
from verify.prom import MetricsParseError, Samples, VllmMetrics, parse_metrics, samples_by_name
from verify.responses import body_excerpt
from verify.streaming import classify_transport_error

METRICS_PATH = "/metrics"
SPEC_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
# The latency histograms vLLM 0.32 exports (vllm/v1/metrics/loggers.py), by the name the report uses.
LATENCY_HISTOGRAMS: dict[str, str] = {
    "ttft": "vllm:time_to_first_token_seconds",
    "queue": "vllm:request_queue_time_seconds",
    "itl": "vllm:inter_token_latency_seconds",
    "e2e": "vllm:e2e_request_latency_seconds",
    "prefill": "vllm:request_prefill_time_seconds",
    "decode": "vllm:request_decode_time_seconds",
}

# Draft positions counted per position: far above any num_speculative_tokens (vLLM's own examples use 1 to 10).
# A hostile `position="1000000000"` label made the report build a list of a billion entries.
MAX_DRAFT_POSITIONS = 64
SPEC_POSITIONS = "spec_decode_by_position"
# The largest /metrics body read: vLLM's is a few hundred KB even with many engines; an endless or huge body
# (a hostile or broken server) is refused instead of read into memory.
MAX_METRICS_BYTES = 32 * 1024 * 1024

Sleep = Callable[[float], Awaitable[None]]
Now = Callable[[], datetime.datetime]


class MetricsReadError(Exception):
    """``/metrics`` could not be read as vLLM's; ``unreachable`` means no answer or a refused credential."""

    def __init__(self, message: str, *, unreachable: bool) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class Snapshot(pydantic.BaseModel):
    """One read, parsed: the summary verify/prom.py makes, the histograms and the per-position counts."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    read_at: datetime.datetime
    summary: VllmMetrics
    histograms: dict[str, Histogram]
    accepted_per_position: dict[int, float]
    # Histograms (by the report's name) present but not readable as one, with why: reported, never used.
    unreadable: dict[str, str] = pydantic.Field(default_factory=dict)


class Window(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    kind: str  # "since the server started" or "window"
    seconds: float | None
    start: datetime.datetime | None
    end: datetime.datetime

    def describe(self) -> str:
        if self.seconds is None:
            return f"since the server started (counters and histograms are cumulative), read {self.end:%H:%M:%S} UTC"
        return f"over {self.seconds:g} s, {self.start:%H:%M:%S} to {self.end:%H:%M:%S} UTC (two reads subtracted)"


class SpecDecode(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    drafts: float | None
    draft_tokens: float | None
    accepted_tokens: float | None
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    acceptance_by_position: list[float | None]


class MetricsReport(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    window: Window
    model_names: tuple[str, ...]
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    prefix_cache_hit_rate: float | None
    preemptions: float | None
    prompt_tokens: float | None
    generation_tokens: float | None
    latency: dict[str, Distribution]
    spec_decode: SpecDecode | None
    # Series the server exported in a shape no histogram can have (name -> why); left out of `latency`.
    unreadable: dict[str, str] = pydantic.Field(default_factory=dict)


def parse_snapshot(text: str, *, model: str | None, read_at: datetime.datetime) -> Snapshot:
    """Parse one ``/metrics`` body; raises ``MetricsParseError`` when it is not Prometheus text."""
    samples = samples_by_name(text)
    found: dict[str, Histogram] = {}
    unreadable: dict[str, str] = {}
    for name, metric in LATENCY_HISTOGRAMS.items():
        try:
            value = histogram(samples, metric, model=model)
        except UnreadableHistogramError as exc:
            unreadable[name] = f"{metric}: {exc}"
            continue
        if value is not None:
            found[name] = value
    try:
        per_position = _per_position(samples, model)
    except UnreadableHistogramError as exc:
        unreadable[SPEC_POSITIONS] = f"{SPEC_PER_POSITION}: {exc}"
        per_position = {}
    return Snapshot(
        read_at=read_at,
        summary=parse_metrics(text, model=model),
        histograms=found,
        accepted_per_position=per_position,
        unreadable=unreadable,
    )


def _per_position(samples: Samples, model: str | None) -> dict[int, float]:
    """Accepted tokens by draft position; ``UnreadableHistogramError`` for a position that is not a small whole
    number or a count that is not finite and non-negative."""
    series = samples.get(SPEC_PER_POSITION, [])
    if model is not None and not any(labels.get("model_name") == model for labels, _ in series):
        model = None
    by_position: dict[int, float] = {}
    for labels, value in series:
        if "position" in labels and (model is None or labels.get("model_name") == model):
            label = labels["position"]
            if not (label.isascii() and label.isdigit()) or int(label) >= MAX_DRAFT_POSITIONS:
                raise UnreadableHistogramError(
                    f"position={label[:40]!r} is not a draft position (a whole number below {MAX_DRAFT_POSITIONS})"
                )
            if not math.isfinite(value) or value < 0:
                raise UnreadableHistogramError(f"position {label} counts {value!r}, not a finite count of 0 or more")
            position = int(label)
            by_position[position] = by_position.get(position, 0.0) + value
    return by_position


async def read_snapshot(client: httpx.AsyncClient, *, model: str | None, now: Now | None = None) -> Snapshot:
    """GET ``/metrics`` through ``client`` (same credential as every other request) and parse it."""
    clock = now or _utc_now
    try:
        status, text = await _bounded_get(client)
    except httpx.HTTPError as exc:
        failure = classify_transport_error(exc)
        raise MetricsReadError(
            f"GET {METRICS_PATH}: {failure.kind.value}: {failure.detail}", unreachable=True
        ) from None
    if text is None:
        raise MetricsReadError(
            f"GET {METRICS_PATH} answered more than {MAX_METRICS_BYTES // (1024 * 1024)} MiB: not vLLM's metrics "
            "(a few hundred KB); stopped reading",
            unreachable=False,
        )
    if status != httpx.codes.OK:
        raise MetricsReadError(
            f"GET {METRICS_PATH} answered {status}: {body_excerpt(text)}",
            unreachable=status in {401, 403},
        )
    try:
        snapshot = parse_snapshot(text, model=model, read_at=clock())
    except MetricsParseError as exc:
        raise MetricsReadError(f"GET {METRICS_PATH}: {exc}", unreachable=False) from None
    if not snapshot.summary.is_vllm:
        raise MetricsReadError(
            f"GET {METRICS_PATH} answered Prometheus text without vllm:num_requests_running: not a vLLM server",
            unreachable=False,
        )
    return snapshot


async def read_metrics(
    client: httpx.AsyncClient,
    base_url: str,
    *,
    model: str | None,
    window_s: float | None,
    sleep: Sleep = asyncio.sleep,
    now: Now | None = None,
) -> MetricsReport:
    """One read (``window_s`` None) or two ``window_s`` apart, as a report."""
    first = await read_snapshot(client, model=model, now=now)
    if window_s is None:
        return report_of(base_url, first, None)
    await sleep(window_s)
    second = await read_snapshot(client, model=model, now=now)
    return report_of(base_url, second, first, window_s=window_s)


def report_of(
    base_url: str, last: Snapshot, earlier: Snapshot | None, *, window_s: float | None = None
) -> MetricsReport:
    summary = last.summary if earlier is None else last.summary.since(earlier.summary)
    unreadable = {**(earlier.unreadable if earlier is not None else {}), **last.unreadable}
    # A histogram unreadable in either read has no window: left out (and named) rather than shown since start.
    histograms = {
        name: value if earlier is None else value.since(earlier.histograms.get(name))
        for name, value in last.histograms.items()
        if name not in unreadable
    }
    per_position = {
        position: value - (earlier.accepted_per_position.get(position, 0.0) if earlier is not None else 0.0)
        for position, value in last.accepted_per_position.items()
    }
    if earlier is not None and any(value < 0 for value in per_position.values()):
        per_position = dict(last.accepted_per_position)  # the server restarted in between
    window = Window(
        kind="since the server started" if earlier is None else "window",
        seconds=None if earlier is None else (window_s if window_s is not None else _seconds(earlier, last)),
        start=None if earlier is None else earlier.read_at,
        end=last.read_at,
    )
    return MetricsReport(
        base_url=base_url,
        window=window,
        model_names=last.summary.model_names,
        running=last.summary.running,
        waiting=last.summary.waiting,
        kv_cache_usage=last.summary.kv_cache_usage,
        prefix_cache_queries=summary.prefix_cache_queries,
        prefix_cache_hits=summary.prefix_cache_hits,
        prefix_cache_hit_rate=summary.prefix_cache_hit_rate,
        preemptions=summary.preemptions,
        prompt_tokens=summary.prompt_tokens,
        generation_tokens=summary.generation_tokens,
        latency={name: distribution(value) for name, value in histograms.items()},
        spec_decode=_spec_decode(summary, per_position),
        unreadable=unreadable,
    )


def _spec_decode(summary: VllmMetrics, per_position: dict[int, float]) -> SpecDecode | None:
    if not summary.spec_decode_enabled:
        return None
    drafts = summary.spec_decode_drafts
    by_position = [
        None if not drafts else per_position.get(position, 0.0) / drafts
        for position in range(max(per_position, default=-1) + 1)
    ]
    return SpecDecode(
        drafts=drafts,
        draft_tokens=summary.spec_decode_draft_tokens,
        accepted_tokens=summary.spec_decode_accepted_tokens,
        acceptance_rate=summary.spec_decode_acceptance_rate,
        mean_acceptance_length=summary.spec_decode_mean_acceptance_length,
        acceptance_by_position=by_position,
    )


async def _bounded_get(client: httpx.AsyncClient) -> tuple[int, str | None]:
    """GET /metrics: the status and the body, or None for a body above MAX_METRICS_BYTES (read no further)."""
    async with client.stream("GET", METRICS_PATH) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > MAX_METRICS_BYTES:
                return response.status_code, None
        return response.status_code, body.decode(response.encoding or "utf-8", errors="replace")


def _seconds(earlier: Snapshot, last: Snapshot) -> float:
    return (last.read_at - earlier.read_at).total_seconds()


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
