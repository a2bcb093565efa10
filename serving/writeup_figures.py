"""The measured figures of the public hand-made Gemma 4 deployments, as typed data (serving/data/writeup-figures.json).

Why in the repository: the latency model's efficiencies are fitted to them and its error is stated against
them (benchmarks/writeup_figures.py, docs/advisor.md). They are targets with their own error, not truths:
taken by hand, with a simple closed-loop client from outside the region, output lengths never stated; each
figure carries the error we give it and whether it is predicted, compared with the planner or cannot be
predicted, and each setup the facts of its serving the catalog does not hold (host, prefix reuse, MTP
counters), each with the sentence that supports it.
"""

from __future__ import annotations

import enum
import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from serving.shapes import Accelerator

FIGURES_FILE = Path(__file__).resolve().parent / "data" / "writeup-figures.json"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Use(enum.StrEnum):
    """What a figure is for: predicted and compared (and, unflagged, fitted to), compared with the capacity
    planner, or printed with the reason it cannot be predicted."""

    CHECK = "check"
    MEMORY = "memory"
    SKIP = "skip"


class Host(_Model):
    """The serving host's vCPUs (None: not stated), which tokenise every prompt, and why we believe it."""

    vcpu: int | None = Field(default=None, ge=1)
    why: str


class SweepReuse(_Model):
    """How much of each sweep prompt another request had sent before (the share of its tokens) and how many
    distinct prompts circulated: what the prefix cache could serve, with the sentence that supports it."""

    share: float = Field(ge=0, le=1)
    distinct: int = Field(ge=1)
    why: str


class MtpCounters(_Model):
    """vLLM's speculative-decoding counters for the setup's checkpoints (`vllm:spec_decode_num_drafts`,
    `..._num_draft_tokens`, `..._num_accepted_tokens`), at the draft length they were measured with."""

    drafts: int = Field(ge=1)
    draft_tokens: int = Field(ge=1)
    accepted: int = Field(ge=0)
    draft_tokens_measured: int = Field(ge=1)
    why: str


class Client(_Model):
    """Which measurement client took the setup's figures (each sat elsewhere: its own time outside the server),
    and the figures that measure that time: the write-up's own single request, whose TTFT for a short prompt is
    the client's time, the host's and one prefill step (``measured_by``, with the sentence in ``measured_why``).
    A client's time is a fact of where it sat, not of the hardware: a fit that never saw the write-up takes it
    from these figures (stacks/latency_fit.leave_one_out), as a user measures a client before trusting it."""

    name: str
    why: str
    measured_by: tuple[str, ...] = ()
    measured_why: str = ""


class Concurrency(_Model):
    """The most requests the platform lets one instance hold at once."""

    value: int = Field(ge=1)
    why: str


class Setup(_Model):
    """What served a write-up's figures: model, variant (None: not in the catalog), accelerator and chips, and
    the facts the latency model needs beyond the catalog (host, prefix reuse, MTP counters, admission)."""

    writeup: str
    model: str
    variant: str | None
    accelerator: Accelerator
    chips: int = Field(ge=1)
    mtp_tokens: int = Field(ge=0)
    kv_cache_dtype: str
    max_num_seqs: int | None
    batched_tokens: int | None
    max_model_len: int | None = None
    note: str
    host: Host
    client: Client
    sweep_reuse: SweepReuse
    mtp_counters: MtpCounters | None = None
    max_concurrency: Concurrency | None = None


class Workload(_Model):
    prompt_tokens: int | None = None
    users: int | None = None
    output_tokens: int | None = None


class Figure(_Model):
    """One figure as printed (``printed``), the value compared (a range's checked point), its error."""

    id: str
    setup: str
    quantity: str
    value: float | None
    printed: str
    status: str
    flagged: bool
    workload: Workload
    # The relative error we give the target (wider for approximate, copied-looking or MTP figures).
    error: float = Field(gt=0)
    use: Use
    why: str


class WriteupFigures(_Model):
    about: str
    source: str
    client: str
    sweep_output_tokens: str
    setups: dict[str, Setup]
    figures: tuple[Figure, ...]

    def setup_of(self, figure: Figure) -> Setup:
        return self.setups[figure.setup]


@functools.cache
def writeup_figures() -> WriteupFigures:
    """The figures, read and checked once (every figure names a setup the file defines)."""
    data = WriteupFigures.model_validate_json(FIGURES_FILE.read_text(encoding="utf-8"))
    unknown = sorted({figure.setup for figure in data.figures} - set(data.setups))
    if unknown:
        raise ValueError(f"{FIGURES_FILE.name}: figures name setups it does not define: {', '.join(unknown)}")
    ids = {figure.id for figure in data.figures}
    missing = sorted({i for setup in data.setups.values() for i in setup.client.measured_by} - ids)
    if missing:
        raise ValueError(f"{FIGURES_FILE.name}: clients are measured by figures it does not have: {', '.join(missing)}")
    return data
