"""Speed calibration records: trusted cells of `gemma-verify bench`, keyed by what changes the speed.

Why: an estimate (serving/latency.py) is only as good as its fitted factors; a cell measured on the very model,
variant, shape, vLLM version and serving arguments is better. `gemma-verify bench-record` turns a results file's
trusted cells (within their physical ceilings) into records; `advise` prefers a record's figures over its
estimate where one matches the workload, and shows both. Each record names the results file it came from, that
file's SHA-256, and when the cell was measured, so a figure can be traced and a changed file noticed.

Records live in the project folder, one JSON line per cell:
``calibration/speed/<model>--<variant>--<shape>.jsonl``.
"""

from __future__ import annotations

from pathlib import Path

import pydantic

SPEED_DIR = Path("calibration") / "speed"
# The vLLM arguments that change how fast the same model serves on the same shape (what a record is keyed by).
SPEED_FLAGS = (
    "--kv-cache-dtype",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--tensor-parallel-size",
    "--quantization",
    "--speculative-config",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--async-scheduling",
    "--enable-chunked-prefill",
)


class SpeedRecord(pydantic.BaseModel):
    """One measured cell: what served it, the workload, the figures, and where they come from."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    model: str
    variant: str
    shape: str
    accelerator: str
    chips: int = pydantic.Field(ge=1)
    vllm_version: str | None
    serving_args: dict[str, str]
    prompt_tokens: int = pydantic.Field(ge=1)
    output_tokens: int = pydantic.Field(ge=1)
    concurrency: int = pydantic.Field(ge=1)
    request_throughput: float = pydantic.Field(ge=0)
    output_throughput: float = pydantic.Field(ge=0)
    p95_ttft_ms: float | None = None
    mean_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    # Speculative decoding: draft tokens a step (0: off), and vLLM's counters during the cell
    # (`vllm:spec_decode_num_drafts`, `..._num_accepted_tokens`), which give the acceptance of these checkpoints.
    speculative_tokens: int = pydantic.Field(default=0, ge=0)
    spec_decode_drafts: float | None = pydantic.Field(default=None, ge=0)
    spec_decode_accepted: float | None = pydantic.Field(default=None, ge=0)
    # The share of prompt tokens the server's prefix cache served during the cell (its own counters).
    prefix_cache_hit_rate: float | None = pydantic.Field(default=None, ge=0, le=1)
    # The requests the cell completed (the samples its per-request percentiles come from) and the cell's 95%
    # intervals on its percentiles (verify/bench/confidence.py, ms): a percentile SLO is decided by a record only
    # where its interval lies on one side of the SLO. A record written before either was kept has neither.
    completed: int | None = pydantic.Field(default=None, ge=0)
    ci: dict[str, list[float]] = pydantic.Field(default_factory=dict)
    measured_at: str
    source_file: str
    source_sha256: str = pydantic.Field(pattern=r"^[0-9a-f]{64}$")

    def cite(self) -> str:
        return f"{self.source_file} (sha256 {self.source_sha256[:12]}), measured {self.measured_at[:16]}"


def speed_args(serve_args: list[str]) -> dict[str, str]:
    """The speed-relevant flags of a `vllm serve` argument list and their values ("" for a bare flag)."""
    found: dict[str, str] = {}
    for index, arg in enumerate(serve_args):
        flag, sep, value = arg.partition("=")
        if flag not in SPEED_FLAGS:
            continue
        if sep:
            found[flag] = value
        elif index + 1 < len(serve_args) and not serve_args[index + 1].startswith("--"):
            found[flag] = serve_args[index + 1]
        else:
            found[flag] = ""
    return found


def records_path(root: Path, model: str, variant: str, shape: str) -> Path:
    return root / SPEED_DIR / f"{model}--{variant}--{shape}.jsonl"


def load_speed_records(root: Path) -> list[SpeedRecord]:
    """Every record in the project; a line that does not parse is an error naming the file and line."""
    folder = root / SPEED_DIR
    if not folder.is_dir():
        return []
    records = []
    for path in sorted(folder.glob("*.jsonl")):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(SpeedRecord.model_validate_json(line))
            except pydantic.ValidationError as error:
                raise ValueError(f"{path}:{number}: not a speed record: {error}") from None
    return records


def save_speed_records(root: Path, records: list[SpeedRecord]) -> list[Path]:
    """Append each record to its file (a record already there, same source and cell, is not written twice)."""
    written: list[Path] = []
    for record in records:
        path = records_path(root, record.model, record.variant, record.shape)
        path.parent.mkdir(parents=True, exist_ok=True)
        existing = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        line = record.model_dump_json()
        if line in existing:
            continue
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        if path not in written:
            written.append(path)
    return written


def matching(  # noqa: PLR0917 - the key of a record, field by field
    records: list[SpeedRecord], model: str, variant: str, shape: str, prompt_tokens: int, output_tokens: int
) -> list[SpeedRecord]:
    """The records of this model, variant and shape measured at this workload (prompt within 10 %, output
    within 25 %), every concurrency."""
    return [
        r
        for r in records
        if (r.model, r.variant, r.shape) == (model, variant, shape)
        and abs(r.prompt_tokens - prompt_tokens) <= 0.1 * prompt_tokens
        and abs(r.output_tokens - output_tokens) <= 0.25 * output_tokens
    ]
