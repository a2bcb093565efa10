"""A cold start split into phases, from the Cloud Logging lines of one revision (or TPU node) start.

Each phase ends at a milestone line (verify/ops/signatures.py MILESTONES, the lines `verify logs` reads):
instance start (Cloud Run starts an instance) -> container start (vLLM's first line) -> engine start
("Starting to load model") -> weights ("Model loading took" / "Loading weights took") -> compile and graph
capture ("init engine ... took") -> server start ("Application startup complete.") -> first passing probe.
Durations come from the entries' Cloud Logging timestamps; when a milestone is missing, its phase is merged
into the next one and named so. The weights' bytes are vLLM's own "Checkpoint size" when it prints one,
else what the stack's plan estimated, and the effective read rate is bytes over the weights phase.

Why the measurement lists its `problems`, and the promote gate needs `gate_problem` to be None: a
container can print any line (and set its own timestamps with structured logging), so a start measured
from whatever lines match could be made to look short. Cloud Run's own lines (instance start, the first
passing probe) count only from its system log; lines of another revision or node are left out; a
milestone earlier than the one before it, or a start and end at the same instant, is a problem; and a start
whose first or last milestone is missing is a lower bound (1,210 s once read as 310 s), never a pass.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from datetime import datetime

import pydantic

from serving.units import GIB
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


class Phase(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    seconds: float
    ended_at: str
    ended_by: str  # the line that ended it


# The milestones only Cloud Run writes, and the log they must come from (Cloud Run's "varlog/system" log).
SYSTEM_MILESTONES = frozenset({"instance-start", "probe-passed"})
SYSTEM_LOG = "run.googleapis.com%2Fvarlog%2Fsystem"


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
    # Why these phases cannot be trusted as a whole start (lines refused, order broken); empty when none.
    problems: list[str] = []
    # The first and last milestone ids seen: a gate needs MILESTONES[0] and MILESTONES[-1].
    first_milestone: str | None = None
    last_milestone: str | None = None

    def gate_problem(self, revision: str | None = None) -> str | None:
        """Why this measurement may not pass a cold-start budget (None when it may): the start's first and last
        milestones must both be seen, nothing refused or out of order, and the lines be of ``revision``."""
        reasons = list(self.problems)
        if revision is not None and self.source != revision:
            reasons.append(f"the lines are of {self.source}, not of {revision}")
        for needed, seen, where in (
            (MILESTONES[0], self.first_milestone, "first"),
            (MILESTONES[-1], self.last_milestone, "last"),
        ):
            if seen != needed.id:
                reasons.append(
                    f"the start's {where} milestone ({needed.phase}) is not in the logs, so the total is a lower bound"
                )
        return "; ".join(reasons) or None

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
    # The log's short name; "" when unknown (then Cloud Run's own milestones are taken from any log).
    log: str = ""


def _accepted(line: Line, problems: list[str]) -> str | None:
    """The milestone id ``line`` marks, unless it is Cloud Run's own milestone printed by someone else."""
    found = milestone(line.text)
    if found is None:
        return None
    if found.id in SYSTEM_MILESTONES and line.log and line.log != SYSTEM_LOG:
        problems.append(
            f"a '{found.phase}' line came from {line.log}, not Cloud Run's system log (a container can print "
            "any line): left out"
        )
        return None
    return found.id


def _last_start(lines: Sequence[Line], ids: Sequence[str | None]) -> list[int]:
    """The indexes of the newest start's lines: from its last `instance-start` (or vLLM's first line) onwards;
    an excerpt with neither is taken whole."""
    for first in ("instance-start", "container-start"):
        if first in ids:
            index = len(ids) - 1 - list(ids)[::-1].index(first)
            if first == "container-start":
                # Keep the instance-start line just before vLLM's first one, when there is one.
                earlier = [i for i in range(index) if ids[i] == "instance-start"]
                index = earlier[-1] if earlier else index
            return list(range(index, len(lines)))
    # An excerpt without the start's first lines: measure what it has.
    return list(range(len(lines))) if any(ids) else []


def _order_problems(ordered: Sequence[tuple[str, datetime]]) -> list[str]:
    """Milestones out of order, or a start whose first and last milestones share one instant."""
    problems = [
        f"{later} ({when_later:%H:%M:%S.%f}) is logged before {earlier} ({when_earlier:%H:%M:%S.%f})"
        for (earlier, when_earlier), (later, when_later) in itertools.pairwise(ordered)
        if when_later < when_earlier
    ]
    if len(ordered) >= 2 and ordered[0][1] == ordered[-1][1]:
        problems.append(f"{ordered[0][0]} and {ordered[-1][0]} have identical timestamps: no start takes 0 s")
    return problems


def measure(lines: Sequence[Line], *, planned_bytes: int | None = None) -> ColdStart | None:
    """The newest cold start in `lines` (oldest first), or None when no start is in them."""
    problems: list[str] = []
    ids = [_accepted(line, problems) for line in lines]
    indexes = _last_start(lines, ids)
    if not indexes:
        return None
    source = lines[next(i for i in indexes if ids[i])].source
    seen: dict[str, tuple[datetime, Line]] = {}
    others: set[str] = set()
    for i in indexes:
        line, found = lines[i], ids[i]
        when = parse_rfc3339(line.timestamp)
        if found is None or when is None:
            continue
        if line.source != source:
            others.add(line.source)
        elif found not in seen:
            seen[found] = (when, line)
    if others:
        problems.append(f"lines of {', '.join(sorted(others))} (not {source}) were left out")
    ordered = [(item, seen[item.id]) for item in MILESTONES if item.id in seen]
    if len(ordered) < 2:
        return None
    problems += _order_problems([(item.phase, when) for item, (when, _) in ordered])
    start = [lines[i] for i in indexes if lines[i].source == source]
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
        source=source,
        started_at=ordered[0][1][1].timestamp,
        phases=phases,
        weight_bytes=weight_bytes,
        bytes_from=bytes_from,
        torch_compile_s=_figure(start, TORCH_COMPILE),
        graph_capture_s=_figure(start, GRAPH_CAPTURE),
        compile_cache=_compile_cache(start),
        missing=[item.phase for item in MILESTONES if item.id not in seen],
        problems=problems,
        first_milestone=ordered[0][0].id,
        last_milestone=ordered[-1][0].id,
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
