"""What each Gemma 4 model scores on the model card's benchmarks, and what each variant loses against bf16.

Why: a cheaper row is often a smaller model, and a price is only an answer beside what it buys. The figures are
data (serving/data/model-quality.json), each with its source, the day it was read and whether it was read at the
page itself; this module reads them once, typed, and answers the few questions `advise` asks: a model's score on a
benchmark, the benchmark's name, and the variant's published loss.
"""

from __future__ import annotations

import datetime
import json
from functools import cache
from pathlib import Path

import pydantic

QUALITY_FILE = Path(__file__).resolve().parent / "data" / "model-quality.json"


class _Data(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class ModelScores(_Data):
    """One model's scores by benchmark key, with where they were read."""

    scores: dict[str, float]
    source: str
    read: datetime.date
    confirmed: bool
    note: str = ""

    def cite(self) -> str:
        seen = "" if self.confirmed else ", unconfirmed: read through a copy"
        return f"{self.source} (read {self.read}{seen})"


class VariantLoss(_Data):
    """What is published about a variant's quality against the bf16 checkpoint the scores are for."""

    loss: str
    source: str
    read: datetime.date
    confirmed: bool
    note: str = ""


class QualityBook(_Data):
    about: str = pydantic.Field(alias="_about")
    # The benchmark models are ordered by when the user names none.
    primary: str
    benchmarks: dict[str, str]
    models: dict[str, ModelScores]
    variants: dict[str, VariantLoss]

    @pydantic.model_validator(mode="after")
    def _known_benchmarks(self) -> QualityBook:
        if self.primary not in self.benchmarks:
            raise ValueError(f"primary {self.primary!r} is not one of the benchmarks: {', '.join(self.benchmarks)}")
        for model, entry in self.models.items():
            unknown = sorted(set(entry.scores) - set(self.benchmarks))
            if unknown:
                raise ValueError(f"{model}: unknown benchmark {unknown[0]!r}; allowed: {', '.join(self.benchmarks)}")
        return self

    def score(self, model: str, benchmark: str | None = None) -> float | None:
        """The model's published score on the benchmark (the primary one by default); None where none is."""
        entry = self.models.get(model)
        return None if entry is None else entry.scores.get(benchmark or self.primary)

    def label(self, benchmark: str | None = None) -> str:
        return self.benchmarks[benchmark or self.primary]

    def loss(self, variant: str) -> VariantLoss | None:
        return self.variants.get(variant)


@cache
def quality_book() -> QualityBook:
    """The quality table (read once)."""
    return QualityBook.model_validate(json.loads(QUALITY_FILE.read_text(encoding="utf-8")))
