"""Which speed records may decide anything: the project's records, each checked before any reader uses it.

Why: a record overrides the estimate, so a forged or stale one moves every answer. Seen: a tiny test model's run
recorded as the 12B on an L4 at 4.3 ms TPOT (about 9 times the bandwidth ceiling), a results file claiming an
8,000-token prefill in 1 us, a hand-written record whose sha256 was all zeros and whose source file did not exist
shown as measured at 10^9 req/s, and one unreadable file breaking every advise run with a traceback. Here a record
is used only if its source file exists with the sha256 it names and its figures are physically possible for the
model, variant and chips it claims (a TTFT no shorter than the prefill's compute floor, a decode no faster than
the memory bandwidth allows); an unreadable file is a usage error naming the file and line. `calibrate`, `advise`
and `calibrate --refit` read records only through here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from serving.catalog import catalog
from serving.latency import decode_ceiling_tokens_per_s, prefill_ceiling_tokens_per_s
from serving.model_cost import model_cost
from serving.planner import KvLayout
from serving.shapes import accelerator_facts
from serving.speed_facts import MissingPeakError, hardware_for
from serving.speed_records import SpeedRecord, load_speed_records
from verify import UsageError


@dataclass
class TrustedRecords:
    """The records a reader may use, and one line for each refused, naming it and why."""

    records: list[SpeedRecord] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def physical_problem(record: SpeedRecord) -> str | None:
    """Why the record's figures cannot be what its model, variant and chips did, or None where they can.

    Generous on purpose (a refusal must be certain): the TTFT floor is the compute of the prompt's uncached tokens
    at every chip's peak (all but one token cached where the record does not say what its cache served), and the
    decode ceiling one stream's at full bandwidth, times every draft token accepted."""
    model = catalog().get(record.model)
    if model is None or record.variant not in model.variants:
        return f"{record.model} {record.variant} is not a catalog model and variant"
    try:
        hardware = hardware_for(record.accelerator, record.chips)
    except (KeyError, ValueError, MissingPeakError):
        return f"no hardware facts for {record.chips} x {record.accelerator}"
    layout = KvLayout.TPU if accelerator_facts(record.accelerator).family == "tpu" else KvLayout.VLLM_HYBRID
    cost = model_cost(model, record.variant, kv_cache_dtype="fp8", tensor_parallel=record.chips, layout=layout)
    prompt = float(record.prompt_tokens)
    hit = record.prefix_cache_hit_rate
    cached = min(prompt * hit, prompt - 1) if hit is not None else prompt - 1
    floor_ms = 1000 * prompt / prefill_ceiling_tokens_per_s(cost, hardware, prompt, cached)
    ttfts = [t for t in (record.mean_ttft_ms, record.p95_ttft_ms) if t is not None]
    if ttfts and min(ttfts) < floor_ms:
        return (
            f"TTFT {min(ttfts):.3g} ms beats the prefill compute floor of {floor_ms:.3g} ms for "
            f"{record.prompt_tokens:,} prompt tokens on {record.chips} x {record.accelerator}"
        )
    tokens_a_step = 1 + record.speculative_tokens
    stream = decode_ceiling_tokens_per_s(cost, hardware, 1, prompt) * tokens_a_step
    tpots = [t for t in (record.mean_tpot_ms, record.p95_tpot_ms) if t is not None and t > 0]
    if tpots and 1000 / min(tpots) > stream:
        return (
            f"TPOT {min(tpots):.3g} ms is {1000 / min(tpots) / stream:.1f} x the bandwidth ceiling "
            f"({1000 / stream:.3g} ms a token for one stream of {record.model} {record.variant} on "
            f"{record.chips} x {record.accelerator})"
        )
    batch = max(record.concurrency, 1)
    total = decode_ceiling_tokens_per_s(cost, hardware, batch, prompt) * tokens_a_step
    produced = max(record.output_throughput, record.request_throughput * record.output_tokens)
    if produced > total:
        return f"{produced:,.3g} output tokens/s is above the bandwidth ceiling of {total:,.3g} at {batch} streams"
    return None


def source_problem(record: SpeedRecord, root: Path) -> str | None:
    """Why the record cannot be traced to the results file it names, or None where that file is there, unchanged."""
    path = Path(record.source_file)
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        return f"its source file {record.source_file} is missing"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != record.source_sha256:
        return (
            f"its source file {record.source_file} has sha256 {digest[:12]}, not the recorded "
            f"{record.source_sha256[:12]}"
        )
    return None


def _label(record: SpeedRecord) -> str:
    return f"{record.model} {record.variant} on {record.shape} at {record.concurrency} users ({record.source_file})"


def trusted_records(root: Path) -> TrustedRecords:
    """The project's records that are traceable and physically possible; UsageError naming the file and line of
    one that does not parse."""
    try:
        records = load_speed_records(root)
    except (ValueError, UnicodeDecodeError) as error:
        raise UsageError(f"unreadable speed record: {error}") from None
    answer = TrustedRecords()
    for record in records:
        problem = source_problem(record, root) or physical_problem(record)
        if problem is None:
            answer.records.append(record)
        else:
            answer.refused.append(f"{_label(record)}: {problem}")
    return answer
