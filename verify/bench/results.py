"""The results file: one JSON line per cell, appended (and fsynced) the moment the cell finishes.

Why JSON lines appended as we go: a sweep over 2048 users and 16K contexts runs for hours; a Ctrl-C,
a dropped laptop lid or a killed CI job must keep every finished cell, and ``--resume`` must know
which cells are done without re-measuring them. Keys follow `vllm bench serve`'s result JSON
(``completed``, ``request_throughput``, ``mean_ttft_ms``, ``p99_e2el_ms`` ...) so the two can be
compared line by line; ours are added beside them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple

import pydantic


class CellKey(NamedTuple):
    """What makes two cells the same measurement (and so what ``--resume`` skips)."""

    model: str
    api: str
    requested_context: int
    max_concurrency: int
    max_tokens: int


class CellRecord(pydantic.BaseModel):
    """One line of the results file. Skipped cells carry no metrics, only the reason."""

    model_config = pydantic.ConfigDict(extra="ignore", frozen=True)

    record: Literal["cell"] = "cell"
    status: Literal["measured", "skipped"]
    skip_reason: str | None = None
    timestamp: str
    # the workload
    model: str
    api: str
    requested_context: int
    actual_context: float | None = None
    max_concurrency: int
    max_tokens: int
    num_prompts: int
    num_warmups: int = 0
    # the endpoint
    base_url: str | None = None
    platform: str | None = None
    accelerator: str | None = None
    vllm_version: str | None = None
    max_model_len: int | None = None
    transport: str | None = None
    prompt_length_source: str | None = None
    # `vllm bench serve` names
    duration: float | None = None
    completed: int = 0
    failed: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    std_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    std_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    std_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_e2el_ms: float | None = None
    median_e2el_ms: float | None = None
    std_e2el_ms: float | None = None
    p90_e2el_ms: float | None = None
    p95_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    # ours: what the numbers mean
    success_rate: float | None = None
    errors: dict[str, int] = pydantic.Field(default_factory=dict)
    error_statuses: dict[str, int] = pydantic.Field(default_factory=dict)
    error_examples: list[str] = pydantic.Field(default_factory=list)
    admission_limit: int | None = None
    platform_limited: bool = False
    platform_limited_failures: int = 0
    price_per_hour_usd: float | None = None
    # What the price is of (the stack's shape and provisioning model) and where its rates come from.
    price_basis: str | None = None
    cost_per_1m_requests_usd: float | None = None
    cost_per_1m_output_tokens_usd: float | None = None
    ceiling_request_throughput: float | None = None
    exceeds_ceiling: bool = False
    # How late the client's own event loop woke up during the measured phase (see verify.bench.stall).
    client_max_stall_ms: float | None = None
    client_stalled_ms: float | None = None
    # The worst worker's mean wake-up lateness, how many load-generator processes measured the cell, and
    # whether the cell describes the server rather than a saturated client (see verify.bench.trust).
    client_mean_lag_ms: float | None = None
    client_workers: int | None = None
    trusted: bool = True
    untrusted_reason: str | None = None
    warnings: list[str] = pydantic.Field(default_factory=list)

    @property
    def key(self) -> CellKey:
        return CellKey(self.model, self.api, self.requested_context, self.max_concurrency, self.max_tokens)

    @property
    def measured(self) -> bool:
        return self.status == "measured"


class LoadedResults(NamedTuple):
    records: list[CellRecord]
    # Lines that could not be read, e.g. the half-written last line of a killed run.
    unreadable_lines: list[int]


def load_results(path: Path) -> LoadedResults:
    """Every readable cell line of ``path``; unreadable lines are reported, not fatal."""
    records: list[CellRecord] = []
    unreadable: list[int] = []
    if not path.exists():
        return LoadedResults(records, unreadable)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(CellRecord.model_validate_json(line))
            except pydantic.ValidationError:
                unreadable.append(number)
    return LoadedResults(records, unreadable)


def done_keys(records: Iterable[CellRecord]) -> set[CellKey]:
    return {record.key for record in records}


def append_record(path: Path, record: CellRecord) -> None:
    """Append one line and make it durable before the next cell starts.

    If a previous run died mid-line, a newline is written first so the new record starts on its own
    line (the broken one stays unreadable and is reported by ``load_results``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    line = record.model_dump_json() + "\n"
    with path.open("a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                line = "\n" + line
        handle.write(line.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
