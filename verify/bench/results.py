"""The results file: one JSON line per cell, appended (and fsynced) the moment the cell finishes.

Why JSON lines appended as we go: a sweep over 2048 users and 16K contexts runs for hours; a Ctrl-C,
a dropped laptop lid or a killed CI job must keep every finished cell, and ``--resume`` must know
which cells are done without re-measuring them. Keys follow `vllm bench serve`'s result JSON
(``completed``, ``request_throughput``, ``mean_ttft_ms``, ``p99_e2el_ms`` ...) so the two can be
compared line by line; ours are added beside them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple, Self

import pydantic

from verify import UsageError
from verify.bench.record_checks import STORED, problems_of


class CellKey(NamedTuple):
    """What makes two cells the same measurement (and so what ``--resume`` skips)."""

    model: str
    api: str
    requested_context: int
    max_concurrency: int
    max_tokens: int
    # Requests per second asked for by an open-loop cell (verify.bench.open_loop); None: closed loop.
    request_rate: float | None = None


class CellRecord(pydantic.BaseModel):
    """One line of the results file. Skipped cells carry no metrics, only the reason."""

    # NaN and infinity are refused: no metric we compute is one, and `compare` must not judge one.
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

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
    # Whether the output length was forced (None: a file written before verify recorded it).
    ignore_eos: bool | None = None
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
    # The bandwidth ceilings of decode for the model and accelerator the record claims (verify/bench/ceilings.py):
    # output tokens/s of one stream and of the cell's whole batch. exceeds_ceiling covers these and the compute one.
    ceiling_stream_tokens_per_s: float | None = None
    ceiling_output_throughput: float | None = None
    exceeds_ceiling: bool = False
    # How many accelerators serve one replica (tensor parallel), and the draft tokens a step may add (speculative
    # decoding; 0 off): what the ceilings assume. None: not known when the cell was measured.
    accelerator_count: int | None = None
    speculative_tokens: int | None = None
    # The parameters a token multiplies that the cell claims (--model-params, or read from the served name): the
    # model the ceilings judge when the name is no catalog id. None: not stated.
    model_params: float | None = None
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
    # Open loop (verify.bench.open_loop): the rate asked, how sends were drawn, and how well they kept it.
    # ``max_concurrency`` is then the in-flight cap.
    request_rate: float | None = None
    arrival: str | None = None
    burstiness: float | None = None
    arrival_seed: int | None = None
    achieved_request_rate: float | None = None
    schedule_late_sends: int | None = None
    schedule_capped_sends: int | None = None
    schedule_p95_lateness_ms: float | None = None
    schedule_max_lateness_ms: float | None = None
    # Goodput (verify.bench.goodput): requests judged one by one against the latency --slo bounds.
    goodput_slo: str | None = None
    goodput_requests: int | None = None
    goodput_share: float | None = None
    goodput_request_rate: float | None = None
    goodput_token_rate: float | None = None
    goodput_share_ci: list[float] | None = None
    goodput_request_rate_ci: list[float] | None = None
    # Confidence (verify.bench.confidence): 95% intervals by field name, and the percentile fields computed
    # from fewer samples than their interval needs (with that minimum): shown as too few, never as a number.
    confidence_level: float | None = None
    ci: dict[str, list[float]] = pydantic.Field(default_factory=dict)
    too_few_samples: dict[str, int] = pydantic.Field(default_factory=dict)
    # The workload's shape (verify.bench.scenarios) and what the server's prefix cache did during the cell.
    scenario: str | None = None
    prefix_cache_hit_rate: float | None = None
    # The server's speculative-decoding counters during the cell (vllm:spec_decode_num_drafts and
    # ..._num_accepted_tokens): the measured acceptance of the served checkpoints the latency model uses.
    spec_decode_drafts: float | None = None
    spec_decode_accepted_tokens: float | None = None
    # ``--scenario needle``: the share of completed answers that held the passcode hidden in their prompt.
    needle_recall: float | None = None

    @pydantic.model_validator(mode="after")
    def _consistent_when_read(self, info: pydantic.ValidationInfo) -> Self:
        """A line read back from a file must be a line verify could have written (see record_checks);
        records verify builds itself are not re-checked (their numbers come from the samples)."""
        if info.context is not None and info.context.get(STORED):
            problems = problems_of(self)
            if problems:
                raise ValueError("; ".join(problems))
        return self

    @property
    def key(self) -> CellKey:
        return CellKey(
            self.model, self.api, self.requested_context, self.max_concurrency, self.max_tokens, self.request_rate
        )

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def load(self) -> str:
        """What loaded the cell, as every listing names it: ``8 users`` (closed loop) or ``20 req/s`` (open loop,
        whose ``max_concurrency`` is only its in-flight cap, never its load)."""
        if self.request_rate is not None:
            return f"{self.request_rate:g} req/s"
        return f"{self.max_concurrency} user{'' if self.max_concurrency == 1 else 's'}"

    @property
    def short_label(self) -> str:
        """``128 x 8 users`` or ``128 x 20 req/s``: the cell in a list of cells."""
        return f"{self.requested_context} x {self.load}"


class ResultsFileError(ValueError):
    """A results file holds a line verify could not have written; the message names ``file:line`` and why."""


class LoadedResults(NamedTuple):
    records: list[CellRecord]
    # Lines cut off mid-write (a killed run's last line, JSON that simply stops): reported, not fatal.
    unreadable_lines: list[int]
    # The line each record was read from, in the same order as ``records``.
    line_numbers: list[int]


def _cut_off(text: str) -> bool:
    """True for a line that is valid JSON up to where it stops: what a kill mid-write leaves."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    return False


def first_error(exc: pydantic.ValidationError) -> str:
    """``field.path: message`` of a model's first complaint, as a file reader reports it."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def decoded_line(path: Path, number: int, raw: bytes, error: type[ValueError]) -> str | None:
    """One line of a JSONL file as text, None when blank; ``error`` naming ``path:number`` when it is not
    UTF-8 (no line verify writes is)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}:{number}: not UTF-8 text ({exc}): not a line verify wrote") from None
    return text if text.strip() else None


def parse_line(path: Path, number: int, raw: bytes) -> CellRecord | None:
    """One line of a results file as a checked record (None for a blank line); raises
    ``ResultsFileError`` naming ``path:number`` and why otherwise."""
    text = decoded_line(path, number, raw, ResultsFileError)
    if text is None:
        return None
    try:
        return CellRecord.model_validate_json(text, context={STORED: True})
    except pydantic.ValidationError as exc:
        raise ResultsFileError(f"{path}:{number}: {first_error(exc)}") from None


def load_results(path: Path) -> LoadedResults:
    """Every cell line of ``path``, each checked (verify.bench.record_checks).

    A line cut off mid-write is reported in ``unreadable_lines``; any other line that is not a cell
    verify could have written, and a second line for a cell (context x concurrency) already read, raise
    ``ResultsFileError`` naming the file, the line and the reason: numbers from such a file would be
    made up, so nothing reads on past it.
    """
    records: list[CellRecord] = []
    numbers: list[int] = []
    unreadable: list[int] = []
    if not path.exists():
        return LoadedResults(records, unreadable, numbers)
    seen: dict[tuple[int, int, float | None], int] = {}
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if _cut_off(raw.decode("utf-8", errors="replace")) and raw.strip():
            unreadable.append(number)
            continue
        record = parse_line(path, number, raw)
        if record is None:
            continue
        cell = (record.requested_context, record.max_concurrency, record.request_rate)
        if cell in seen:
            rate = "" if cell[2] is None else f" at {cell[2]:g} req/s"
            raise ResultsFileError(
                f"{path}:{number}: a second line for context {cell[0]} x concurrency {cell[1]}{rate} (the first is "
                f"line {seen[cell]}): a results file holds one sweep, one line per cell; split the file or remove one"
            )
        seen[cell] = number
        records.append(record)
        numbers.append(number)
    return LoadedResults(records, unreadable, numbers)


def read_checked(path: Path) -> LoadedResults:
    """``load_results`` for a command: a line verify could not have written is a usage error (exit 2)
    naming ``file:line`` and why."""
    try:
        return load_results(path)
    except ResultsFileError as exc:
        raise UsageError(str(exc)) from None


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
