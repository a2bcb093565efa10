"""A cold start split into phases, from the Cloud Logging lines of one revision (or TPU node) start.

Each phase ends at a milestone line (verify/ops/signatures.py MILESTONES, the lines `verify logs` reads):
instance start (Cloud Run starts an instance) -> container start (vLLM's first line) -> engine start
("Starting to load model") -> weights ("Model loading took" / "Loading weights took") -> compile and graph
capture ("init engine ... took") -> server start ("Application startup complete.") -> first passing probe.
Durations come from the entries' Cloud Logging timestamps; when a milestone is missing, its phase is merged
into the next one and named so. The weights' bytes are vLLM's own "Checkpoint size" when it prints one,
else what the stack's plan estimated, and the effective read rate is bytes over the weights phase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

import pydantic

from verify.ops.google import parse_rfc3339
from verify.ops.signatures import (
    CACHE_LOAD_FAILED,
    CACHE_LOADED,
    CACHE_SAVED,
    CHECKPOINT_GIB,
    GRAPH_CAPTURE,
    MILESTONES,
    MODEL_LOADING,
    TORCH_COMPILE,
    milestone,
)

GIB = 1024**3


class Phase(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    seconds: float
    ended_at: str
    ended_by: str  # the line that ended it


class ColdStart(pydantic.BaseModel):
    """One measured cold start: its phases in order, the total, the weights' bytes and read rate."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    source: str  # the revision (or container) whose lines these are
    started_at: str
    phases: list[Phase]
    weight_bytes: int | None = None
    bytes_from: str | None = None
    # What vLLM itself reported, seconds: torch.compile and CUDA graph capture when it prints them.
    torch_compile_s: float | None = None
    graph_capture_s: float | None = None
    # What became of torch.compile's cache in this start (loaded / load failure / compiled and saved); None:
    # vLLM printed none of those lines (no compile, or the cache disabled).
    compile_cache: str | None = None
    missing: list[str] = []

    @property
    def total_s(self) -> float:
        return sum(phase.seconds for phase in self.phases)

    @property
    def slowest(self) -> Phase:
        return max(self.phases, key=lambda phase: phase.seconds)

    def phase(self, name: str) -> Phase | None:
        return next((phase for phase in self.phases if name in phase.name.split(" + ")), None)

    @property
    def read_bytes_per_s(self) -> float | None:
        weights = self.phase("weights")
        if self.weight_bytes is None or weights is None or weights.seconds <= 0:
            return None
        return self.weight_bytes / weights.seconds

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def total_seconds(self) -> float:
        return round(self.total_s, 3)


class Line(pydantic.BaseModel):
    """What measuring needs of a log line (verify.ops.logs.LogLine has these fields)."""

    timestamp: str
    source: str
    text: str


def _last_start(lines: Sequence[Line]) -> list[Line]:
    """The lines of the newest start: from its last `instance-start` (or vLLM's first line) onwards; an excerpt
    with neither is taken whole."""
    ids = [(found.id if (found := milestone(line.text)) else None) for line in lines]
    for first in ("instance-start", "container-start"):
        if first in ids:
            index = len(ids) - 1 - ids[::-1].index(first)
            if first == "container-start":
                # Keep the instance-start line just before vLLM's first one, when there is one.
                earlier = [i for i in range(index) if ids[i] == "instance-start"]
                index = earlier[-1] if earlier else index
            return list(lines[index:])
    # An excerpt without the start's first lines: measure what it has.
    return [line for line, found in zip(lines, ids, strict=True) if found] and list(lines)


def measure(lines: Sequence[Line], *, planned_bytes: int | None = None) -> ColdStart | None:
    """The newest cold start in `lines` (oldest first), or None when no start is in them."""
    start = _last_start(lines)
    if not start:
        return None
    seen: dict[str, tuple[datetime, Line]] = {}
    for line in start:
        found = milestone(line.text)
        when = parse_rfc3339(line.timestamp)
        if found is not None and when is not None and found.id not in seen:
            seen[found.id] = (when, line)
    ordered = [(item, seen[item.id]) for item in MILESTONES if item.id in seen]
    if len(ordered) < 2:
        return None
    names = [item.phase for item in MILESTONES]
    phases: list[Phase] = []
    previous_when, previous_index = ordered[0][1][0], names.index(ordered[0][0].phase)
    for item, (when, line) in ordered[1:]:
        index = names.index(item.phase)
        phases.append(
            Phase(
                # A missing milestone's phase is merged into the next one, and named so.
                name=" + ".join(names[previous_index + 1 : index + 1]),
                seconds=max((when - previous_when).total_seconds(), 0.0),
                ended_at=line.timestamp,
                ended_by=_message(line.text)[:160],
            )
        )
        previous_when, previous_index = when, index
    weight_bytes, bytes_from = _bytes(start, planned_bytes)
    return ColdStart(
        source=ordered[0][1][1].source,
        started_at=ordered[0][1][1].timestamp,
        phases=phases,
        weight_bytes=weight_bytes,
        bytes_from=bytes_from,
        torch_compile_s=_figure(start, TORCH_COMPILE),
        graph_capture_s=_figure(start, GRAPH_CAPTURE),
        compile_cache=_compile_cache(start),
        missing=[item.phase for item in MILESTONES if item.id not in seen],
    )


# vLLM's prefix (vllm/logger.py): "(<process> pid=N) LEVEL MM-DD HH:MM:SS [file:line] "; uvicorn's "INFO:     ".
_PREFIX = re.compile(r"^(\(\S+ pid=\d+\) )?[A-Z]+ \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]+\] |^INFO: +")


def _message(text: str) -> str:
    """The line without vLLM's (or uvicorn's) prefix: what the phase table shows."""
    return _PREFIX.sub("", text.strip())


def _figure(lines: Sequence[Line], pattern: re.Pattern[str]) -> float | None:
    for line in lines:
        found = pattern.search(line.text)
        if found:
            return float(found.group(1))
    return None


def _compile_cache(lines: Sequence[Line]) -> str | None:
    """Whether the start loaded torch.compile's artifacts from the cache (compileCache.keep makes that possible
    across revisions), failed to and compiled again, or compiled and saved them; None when vLLM said nothing."""
    loaded = failed = saved = None
    for line in lines:
        loaded = loaded or CACHE_LOADED.search(line.text)
        failed = failed or CACHE_LOAD_FAILED.search(line.text)
        saved = saved or CACHE_SAVED.search(line.text)
    if failed:
        where = "there" if saved and saved[1] == failed[1] else f"to {saved[1]}" if saved else ""
        again = f"; compiled again and saved {where}" if saved else "; compiled again"
        return f"not loaded from {failed[1]} ({failed[2].strip()[:160]}){again}"
    if loaded:
        return f"loaded from {loaded[1]} (no compile)"
    if saved:
        return f"compiled (no cache entry to load) and saved to {saved[1]}"
    return None


def _bytes(lines: Sequence[Line], planned: int | None) -> tuple[int | None, str | None]:
    """The checkpoint's bytes: vLLM's "Checkpoint size", its GPU "Model loading took X GiB", or the plan's."""
    for pattern, what in ((CHECKPOINT_GIB, "vLLM's 'Checkpoint size'"), (MODEL_LOADING, "vLLM's 'Model loading took'")):
        for line in lines:
            found = pattern.search(line.text)
            if found and float(found.group(1)) > 0:
                return round(float(found.group(1)) * GIB), what
    if planned is not None:
        return planned, "the stack's plan (built-in profiles)"
    return None, None


# The words of each milestone line, for the Logging query (only those lines are read, so request logs
# cannot push a start out of the page).
_QUERY_TERMS = (
    "Starting new instance",
    "non-default args",
    "Starting to load model",
    "Model loading took",
    "Loading weights took",
    "Runai Model Streamer: 100%",
    "Checkpoint size",
    "torch.compile took",
    "Graph capturing finished",
    "Directly load AOT compilation",
    "Compiling model again due to a load failure",
    "saved AOT compiled function",
    "init engine (profile",
    "Application startup complete",
    "probe succeeded",
)


def milestone_filter(base: str, revision: str | None) -> str:
    """`base` (the stack's log filter) narrowed to the milestone lines, and to one revision when given."""
    terms = " OR ".join(f'textPayload:"{term}" OR jsonPayload.message:"{term}"' for term in _QUERY_TERMS)
    narrowed = f"{base} AND ({terms})"
    return f'{narrowed} AND resource.labels.revision_name="{revision}"' if revision else narrowed
