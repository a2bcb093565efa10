"""The facts the latency model reads about hardware, and the efficiencies fitted to measured figures.

Why its own module: the latency model (serving/latency.py) is arithmetic; which peak FLOP/s and bandwidth an
accelerator has is data (the shapes table, serving/data/shapes.json, each figure with its source), and the
efficiencies are a fit (benchmarks/writeup_figures.py writes serving/data/latency-efficiency.json). Everything
that turns "accelerator X, N chips" into ``latency.Hardware`` goes through ``hardware_for``, which reads the
shapes table itself: one source for a chip's bandwidth, compute and memory, whoever asks.
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from serving.latency import Efficiency, Hardware
from serving.shapes import accelerator_facts

EFFICIENCY_FILE = Path(__file__).resolve().parent / "data" / "latency-efficiency.json"


class MissingPeakError(ValueError):
    """The accelerator's table entry has no peak FLOP/s or bandwidth: no estimate can be made."""


def hardware_for(accelerator: str, chips: int = 1) -> Hardware:
    """``chips`` of ``accelerator`` (a key of the shapes table, or an ``Accelerator``) sharding one model (tensor
    parallel), at their peak dense bf16 FLOP/s (the precision w4a16, NVFP4 on Ada and bf16 checkpoints multiply
    in; FP8/FP4 tensor cores are not credited, which errs towards slower prefill) and memory bandwidth."""
    facts = accelerator_facts(str(accelerator))
    if facts.peak_dense_bf16_flops is None:
        raise MissingPeakError(f"{accelerator}: no peak dense bf16 FLOP/s recorded in serving/data/shapes.json")
    return Hardware(
        name=facts.display_name if chips == 1 else f"{chips} x {facts.display_name}",
        chips=chips,
        peak_flops=facts.peak_dense_bf16_flops,
        bandwidth=facts.memory_bandwidth,
        family=facts.family,
    )


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class FittedError(_Model):
    """How far the model's predictions fell from the measured figures, as |predicted / measured - 1|."""

    quantity: str
    figures: int = Field(ge=0)
    median: float | None
    worst: float | None


class FittedEfficiency(_Model):
    """serving/data/latency-efficiency.json: the fitted factors, how they were fitted, and the errors."""

    about: str
    fitted: datetime.date
    method: str
    # Achieved / peak FLOP/s in prefill, per hardware family.
    compute_gpu: float = Field(gt=0, le=1)
    compute_tpu: float = Field(gt=0, le=1)
    bandwidth: float = Field(gt=0, le=1)
    client_s: float = Field(ge=0)
    # Output tokens of a write-up sweep request (never stated): a nuisance of the fit, not used to advise.
    sweep_output_tokens: int = Field(ge=1)
    fitted_on: tuple[str, ...]
    held_out: tuple[str, ...]
    errors_fitted: tuple[FittedError, ...]
    errors_held_out: tuple[FittedError, ...]
    errors_checked: tuple[FittedError, ...]

    def efficiency(self, hardware: Hardware, *, client: bool = True) -> Efficiency:
        """The factors for ``hardware``'s family; ``client`` False leaves out the time outside the engine (a
        server-side figure, or a client in the serving region)."""
        compute = self.compute_tpu if hardware.family == "tpu" else self.compute_gpu
        return Efficiency(compute=compute, bandwidth=self.bandwidth, client_s=self.client_s if client else 0.0)

    def stated_error(self) -> str:
        """One line an estimate carries: the fit's typical error on figures it was not fitted to."""
        checked = [e for e in (*self.errors_held_out, *self.errors_checked) if e.median is not None]
        parts = [f"{e.quantity} median {e.median:.0%} (n={e.figures})" for e in checked]
        return "error against measured figures not fitted to: " + ", ".join(parts) if parts else "error unknown"


@functools.cache
def fitted_efficiency() -> FittedEfficiency:
    """The efficiencies every estimate uses, read once."""
    return FittedEfficiency.model_validate_json(EFFICIENCY_FILE.read_text(encoding="utf-8"))
