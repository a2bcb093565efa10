"""The load-generator job's task files, read at the edge: every share line parsed and checked, or refused.

Why: ``bench collect`` turns these files into the numbers a person trusts, and the files travel through
a bucket, ``gcloud storage cp -r`` (run twice, it nests a second copy of the run inside the first) and
hand edits. Before these checks a copied folder counted every request twice ("completed 32 of 16"),
two runs of one cell were pooled into one window of a day, a negative TTFT or an impossible throughput
came out as a number, and six kinds of malformed line each ended in a traceback. Now:

- only regular files named ``task-NNNNN.jsonl`` are read (a README is ignored; a FIFO or folder of
  that name is refused rather than read forever);
- each share line is parsed by ``ShareLine`` (exit 2 naming ``file:line`` and the first problem):
  samples with non-negative times, TTFT at most E2EL, sent and finished inside their share's window,
  output tokens within ``max_tokens``; the task's slot, users and request count as the sweep splits them;
- every line carries its run id: a folder holding two runs is refused (collect each run's folder);
- lines are de-duplicated by (task, cell, worker): an exact copy is dropped (and counted), two different
  lines claiming the same share are refused.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Self

import pydantic

from verify.bench.prompts import PromptLengthSource
from verify.bench.results import decoded_line, first_error
from verify.bench.samples import split_counts, split_users
from verify.streaming import Api, FailureKind

SHARE_RECORD = "share"
TASK_FILE = re.compile(r"^task-(\d{5})\.jsonl$")
# Instants are wall-clock seconds moved from one process's monotonic clock by one offset, so they agree to
# float rounding; this much slack absorbs it and nothing a real share could need.
WINDOW_SLACK_S = 1e-3

NonNegative = pydantic.NonNegativeFloat
Count = pydantic.NonNegativeInt


class CollectError(ValueError):
    """The results directory cannot be merged; the message names the file (and line) and why."""


class _Line(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CellSpec(_Line):
    model: str
    api: Api
    context: pydantic.PositiveInt
    concurrency: pydantic.PositiveInt
    max_tokens: pydantic.PositiveInt
    requests: pydantic.PositiveInt
    warmups: Count
    ignore_eos: bool


class EndpointSpec(_Line):
    base_url: str
    platform: str | None
    vllm_version: str | None
    max_model_len: pydantic.PositiveInt | None
    admission_limit: pydantic.PositiveInt | None
    transport: str | None
    # What serves the endpoint, when the job was told (the stack's accelerator): collect's ceiling check.
    accelerator: str | None = None


class ShapeSpec(_Line):
    requested: pydantic.PositiveInt
    body_words: Count
    pad_letters: Count
    measured: pydantic.PositiveInt
    source: PromptLengthSource


class FailureSpec(_Line):
    kind: FailureKind
    detail: str
    status: int | None


class ResultSpec(_Line):
    # A request's fields grow with what streaming learns (the answering model, reasoning); none is a metric.
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    ttft_s: NonNegative | None
    itl_s: tuple[NonNegative, ...]
    e2el_s: NonNegative
    output_tokens: Count | None
    prompt_tokens: Count | None
    finish_reason: str | None
    text: str
    content_chunks: Count
    failure: FailureSpec | None

    @pydantic.model_validator(mode="after")
    def _first_token_before_the_end(self) -> Self:
        if self.ttft_s is not None and self.ttft_s > self.e2el_s + WINDOW_SLACK_S:
            raise ValueError(f"a sample's ttft_s {self.ttft_s:g} is after its e2el_s {self.e2el_s:g}")
        return self


class StallSpec(_Line):
    max_ms: NonNegative
    stalled_ms: NonNegative
    probes: Count
    mean_ms: NonNegative


class ShareBody(_Line):
    started_at: NonNegative
    finished_at: NonNegative
    users: pydantic.PositiveInt
    stalls: StallSpec
    samples: tuple[tuple[NonNegative, ResultSpec], ...]

    @pydantic.model_validator(mode="after")
    def _inside_the_window(self) -> Self:
        if self.finished_at < self.started_at:
            raise ValueError(f"finished_at {self.finished_at:f} is before started_at {self.started_at:f}")
        for number, (sent_at, result) in enumerate(self.samples, start=1):
            if (
                sent_at < self.started_at - WINDOW_SLACK_S
                or sent_at + result.e2el_s > self.finished_at + WINDOW_SLACK_S
            ):
                raise ValueError(
                    f"sample {number} (sent at {sent_at:f}, {result.e2el_s:g} s long) is outside its share's "
                    f"window {self.started_at:f}-{self.finished_at:f}"
                )
        return self


class ShareLine(_Line):
    """One worker's share of one cell, as ``bench task`` writes it."""

    record: Literal["share"]
    run_id: str = pydantic.Field(min_length=1)
    task_index: Count
    task_count: pydantic.PositiveInt
    tasks_expected: pydantic.PositiveInt
    worker: Count
    cell: CellSpec
    endpoint: EndpointSpec
    shape: ShapeSpec
    share: ShareBody

    @pydantic.model_validator(mode="after")
    def _as_the_sweep_splits_it(self) -> Self:
        cell = self.cell
        if self.task_index >= self.task_count:
            raise ValueError(f"task_index {self.task_index} is not one of {self.task_count} tasks")
        expected = min(cell.concurrency, self.task_count)
        if self.tasks_expected != expected:
            raise ValueError(
                f"tasks_expected {self.tasks_expected}, but {cell.concurrency} users over {self.task_count} tasks "
                f"take {expected}"
            )
        users, requests = task_share(self.task_index, self.task_count, cell.concurrency, cell.requests)
        if self.share.users > users or len(self.share.samples) > requests:
            raise ValueError(
                f"{self.share.users} users and {len(self.share.samples)} samples, but task {self.task_index} of "
                f"{self.task_count} runs {users} users and {requests} requests of this cell"
            )
        for _, result in self.share.samples:
            if result.output_tokens is not None and result.output_tokens > cell.max_tokens:
                raise ValueError(
                    f"a sample has {result.output_tokens} output tokens, above max_tokens {cell.max_tokens}"
                )
        return self

    @property
    def cell_key(self) -> tuple[int, int]:
        return (self.cell.context, self.cell.concurrency)


def task_share(index: int, count: int, concurrency: int, requests: int) -> tuple[int, int]:
    """The users and measured requests of ``concurrency`` users and ``requests`` requests that task
    ``index`` of ``count`` runs (0 and 0 when the cell has fewer users than tasks and this one sits out)."""
    split = split_users(concurrency, count)
    if index >= len(split):
        return 0, 0
    return split[index], split_counts(requests, split)[index]


@dataclass(frozen=True, slots=True)
class Located:
    """A parsed share line and where it was read."""

    line: ShareLine
    path: Path
    number: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"


@dataclass(frozen=True, slots=True)
class RunShares:
    """Every distinct share line of one run, and how many exact copies were dropped."""

    run_id: str
    lines: tuple[Located, ...]
    copies_dropped: int


def task_files(directory: Path) -> list[Path]:
    """Every ``task-NNNNN.jsonl`` under ``directory`` (recursively: a copied run keeps its folder); other
    names are ignored; one of these names that is not a regular file is refused (a FIFO would block)."""
    found = []
    for path in sorted(directory.rglob("task-*.jsonl")):
        if not TASK_FILE.match(path.name):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            raise CollectError(f"{path} is named like a task file but is not a regular file; remove it")
        found.append(path)
    if not found:
        raise CollectError(f"{directory} holds no task-NNNNN.jsonl files (copy the run's folder from the bucket first)")
    return found


def _parse(path: Path, number: int, raw: bytes) -> ShareLine | None:
    text = decoded_line(path, number, raw, CollectError)
    if text is None:
        return None
    try:
        fields = json.loads(text)
    except json.JSONDecodeError:
        raise CollectError(f"{path}:{number}: not JSON (a task killed mid-write?)") from None
    if not isinstance(fields, dict):
        raise CollectError(f"{path}:{number}: not a JSON object")
    if fields.get("record") != SHARE_RECORD:
        return None
    try:
        return ShareLine.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise CollectError(f"{path}:{number}: {first_error(exc)}") from None


def read_shares(directory: Path) -> RunShares:
    """Every share line of the run under ``directory``, checked and de-duplicated (see the module)."""
    located = [
        Located(line, path, number)
        for path in task_files(directory)
        for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1)
        if (line := _parse(path, number, raw)) is not None
    ]
    if not located:
        raise CollectError(f"{directory} holds task files but no share lines (did every task fail?)")
    runs = sorted({item.line.run_id for item in located})
    if len(runs) > 1:
        firsts = [f"{run} at {next(i.where for i in located if i.line.run_id == run)}" for run in runs]
        raise CollectError(
            f"{directory} holds {len(runs)} runs ({', '.join(firsts)}): collect each run's folder on its own"
        )
    return RunShares(runs[0], *_distinct(located))


def _distinct(located: Sequence[Located]) -> tuple[tuple[Located, ...], int]:
    kept: dict[tuple[int, int, int, int], Located] = {}
    dropped = 0
    for item in located:
        line = item.line
        key = (line.task_index, *line.cell_key, line.worker)
        first = kept.get(key)
        if first is None:
            kept[key] = item
        elif first.line == line:
            dropped += 1
        else:
            raise CollectError(
                f"{item.where} and {first.where} are two different shares of task {line.task_index}, worker "
                f"{line.worker} of context {line.cell.context} x concurrency {line.cell.concurrency}: one of them "
                "is not this run's"
            )
    return tuple(kept.values()), dropped
