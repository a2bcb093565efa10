"""What a results file measured, in words: the line every report, chart and comparison starts from.

Why one place: a chart without its model, endpoint, date and workload cannot be told from last
week's, and ``verify compare`` must say (or refuse) when its two files asked different questions.
Everything here is read from the cell records, so a file renders the same whenever it is rendered.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from remote.text import escape_controls
from verify.bench.results import CellRecord
from verify.numbers import readable


def _spread(values: Iterable[int]) -> str:
    """``32`` or ``32-128``: one figure when every cell agrees, the range otherwise."""
    distinct = sorted(set(values))
    if not distinct:
        return "-"
    if len(distinct) == 1:
        return readable(distinct[0])
    return f"{readable(distinct[0])}-{readable(distinct[-1])}"


def _one(values: Iterable[str | None]) -> str:
    """The one value every cell records (or each of them): as one line, its controls shown as escapes (a served
    name or version is the server's text, and a newline in it broke the chart's title)."""
    distinct = sorted({escape_controls(value, keep_newlines=False) if value else "unknown" for value in values})
    return " / ".join(distinct) if distinct else "unknown"


def sweep_date(records: Sequence[CellRecord]) -> str:
    """The UTC day (and minute) the sweep started, from the earliest cell timestamp."""
    stamps = []
    for record in records:
        try:
            stamps.append(datetime.datetime.fromisoformat(record.timestamp))
        except ValueError:
            continue
    if not stamps:
        return "unknown date"
    first = min(stamps)
    if first.tzinfo is not None:
        first = first.astimezone(datetime.UTC)
    return first.strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True, slots=True)
class Workload:
    """The facts of one results file that a reader needs to trust or reuse its numbers."""

    model: str
    endpoint: str
    accelerator: str
    vllm_version: str
    date: str
    api: str
    max_tokens: str
    requests_per_cell: str
    contexts: str
    concurrencies: str

    @classmethod
    def of(cls, records: Sequence[CellRecord]) -> Workload:
        return cls(
            model=_one(r.model for r in records),
            endpoint=_one(r.base_url for r in records),
            accelerator=_one(r.accelerator for r in records),
            vllm_version=_one(r.vllm_version for r in records),
            date=sweep_date(records),
            api=_one(r.api for r in records),
            max_tokens=_spread(r.max_tokens for r in records),
            requests_per_cell=_spread(r.num_prompts for r in records),
            contexts=", ".join(str(c) for c in sorted({r.requested_context for r in records})),
            concurrencies=", ".join(str(c) for c in sorted({r.max_concurrency for r in records})),
        )

    def headline(self) -> str:
        """``tiny-gemma at http://... (nvidia-l4, vLLM 0.32.0), 2026-11-23 15:40 UTC``"""
        accelerator = "accelerator unknown" if self.accelerator == "unknown" else self.accelerator
        return f"{self.model} at {self.endpoint} ({accelerator}, vLLM {self.vllm_version}), {self.date}"

    def requests(self) -> str:
        """``chat API, 128 output tokens per request, 32-128 requests per cell``"""
        return (
            f"{self.api} API, {self.max_tokens} output tokens per request, {self.requests_per_cell} requests per cell"
        )

    def grid(self) -> str:
        return f"context {self.contexts} tokens x concurrency {self.concurrencies}"
