"""The measured figures of the public hand-made Gemma 4 deployments, as typed data (serving/data/writeup-figures.json).

Why in the repository: the latency model's efficiencies are fitted to them and its error is stated against
them (benchmarks/writeup_figures.py, docs/advisor.md). They are targets with their own error, not truths:
taken by hand, with a simple closed-loop client from outside the region, output lengths never stated; each
figure carries the error we give it and whether it is fitted, held out, checked or cannot be predicted.
"""

from __future__ import annotations

import enum
import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from serving.accelerators import Accelerator

FIGURES_FILE = Path(__file__).resolve().parent / "data" / "writeup-figures.json"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Use(enum.StrEnum):
    """What a figure is for: fitted to, held out of the fit, predicted and compared, compared with the
    capacity planner, or printed with the reason it cannot be predicted."""

    FIT = "fit"
    HOLDOUT = "holdout"
    CHECK = "check"
    MEMORY = "memory"
    SKIP = "skip"


class Setup(_Model):
    """What served a write-up's figures: model, variant (None: not in the catalog), accelerator and chips."""

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
    return data
