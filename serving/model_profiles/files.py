"""The JSON a model profile is written in: a checkpoint's config.json fields and the bytes of its weights.

Why its own module: the model catalog (serving/catalog) builds the same profiles from its variants, and
both must read weights and configs the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from serving.model_profiles.architecture import ConfigError, architecture_from_config
from serving.planner import ModelProfile


class WeightPart(BaseModel):
    """One part of a checkpoint stored at one width (e.g. MLP in int4, attention in bf16)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    what: str
    parameters: int = Field(ge=0)
    bits_per_parameter: float = Field(gt=0)

    @property
    def bytes(self) -> int:
        return round(self.parameters * self.bits_per_parameter / 8)


class Weights(BaseModel):
    """The bytes of a checkpoint's weights: measured (`total_size`) or summed over parts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total_size: int | None = Field(default=None, ge=0)
    parts: tuple[WeightPart, ...] = ()
    source: str

    @property
    def bytes(self) -> int:
        if self.total_size is not None:
            return self.total_size
        return sum(part.bytes for part in self.parts)


class ProfileFile(BaseModel):
    """The JSON a built-in profile is written in (serving/model_profiles/*.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    checkpoint: str
    # The checkpoint's config.json fields the planner reads, verbatim (nested text_config allowed).
    config: dict[str, Any]
    config_source: str
    weights: Weights
    # Which numbers are estimates rather than read from the checkpoint, and why.
    estimates: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_profile(self) -> ModelProfile:
        if self.weights.total_size is None and not self.weights.parts:
            raise ConfigError(f"profile {self.name}: weights need total_size or parts")
        return ModelProfile(
            name=self.name,
            architecture=architecture_from_config(self.config),
            weight_bytes=self.weights.bytes,
            weight_source=self.weights.source,
            estimates=self.estimates,
        )
