"""The facts the latency model reads about hardware, and the efficiencies fitted to measured figures.

Why its own module: the latency model (serving/latency.py) is arithmetic; which peak FLOP/s, bandwidth and
interconnect an accelerator has is data (the shapes table, serving/data/shapes.json, each figure with its
source), and the efficiencies are a fit (benchmarks/writeup_figures.py, and `gemma-verify calibrate --refit`
with the project's own records, write serving/data/latency-efficiency.json). Everything that turns
"accelerator X, N chips" into ``latency.Hardware`` goes through ``hardware_for``, which reads the shapes table
itself: one source for a chip's bandwidth, compute, memory and links, whoever asks.
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from serving.latency import Efficiency, Hardware, Interconnect
from serving.shapes import accelerator_facts

EFFICIENCY_FILE = Path(__file__).resolve().parent / "data" / "latency-efficiency.json"
FAMILIES = ("gpu", "tpu")


class MissingPeakError(ValueError):
    """The accelerator's table entry has no peak FLOP/s or bandwidth: no estimate can be made."""


def hardware_for(accelerator: str, chips: int = 1, *, host_vcpus: int | None = None) -> Hardware:
    """``chips`` of ``accelerator`` (a key of the shapes table, or an ``Accelerator``) sharding one model (tensor
    parallel) over the table's interconnect, at their peak dense bf16 FLOP/s (the precision w4a16, NVFP4 on Ada
    and bf16 checkpoints multiply in; FP8/FP4 tensor cores are not credited, which errs towards slower prefill)
    and memory bandwidth; ``host_vcpus`` the host's CPUs (the shape's, None: unknown, no host limit)."""
    facts = accelerator_facts(str(accelerator))
    if facts.peak_dense_bf16_flops is None:
        raise MissingPeakError(f"{accelerator}: no peak dense bf16 FLOP/s recorded in serving/data/shapes.json")
    link = facts.interconnect
    if chips > 1 and link is None:
        raise MissingPeakError(f"{accelerator}: no interconnect recorded in serving/data/shapes.json for TP {chips}")
    return Hardware(
        name=facts.display_name if chips == 1 else f"{chips} x {facts.display_name}",
        chips=chips,
        peak_flops=facts.peak_dense_bf16_flops,
        bandwidth=facts.memory_bandwidth,
        family=facts.family,
        interconnect=None
        if link is None
        else Interconnect(kind=link.kind, bandwidth=link.bandwidth_gb_per_s * 1e9, latency_s=link.latency_us * 1e-6),
        host_vcpus=host_vcpus,
    )


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class FamilyFactors(_Model):
    """One accelerator family's fitted factors: achieved / peak FLOP/s and bytes/s, and the fixed time of one
    forward pass, ms."""

    compute: float = Field(gt=0, le=1)
    bandwidth: float = Field(gt=0, le=1)
    step_ms: float = Field(ge=0)


class FittedError(_Model):
    """How far the model's predictions fell from the measured figures, as |predicted / measured - 1|."""

    quantity: str
    figures: int = Field(ge=0)
    median: float | None
    worst: float | None


class KindError(_Model):
    """The error that applies to one kind of workload on one family: the fit's median on its figures, and the
    median when each write-up's figures are predicted by a fit that never saw that write-up."""

    family: str
    kind: str
    figures: int = Field(ge=0)
    median: float | None
    leave_one_out: float | None


class RecordSource(_Model):
    """A results file a refit read: its path, its SHA-256 and how many of its cells were used."""

    file: str
    sha256: str
    cells: int = Field(ge=0)


class Provenance(_Model):
    """What the factors were fitted to: the write-up figures (priors, each weighted by its stated error) and the
    project's speed records, by whom, and which figures' predictions moved most with the refit."""

    command: str
    figures: int = Field(ge=0)
    records: tuple[RecordSource, ...] = ()
    moved: tuple[str, ...] = ()


class FittedEfficiency(_Model):
    """serving/data/latency-efficiency.json: the fitted factors, how they were fitted, and the errors."""

    about: str
    fitted: datetime.date
    method: str
    families: dict[str, FamilyFactors]
    # A typical remote client's time outside the server (the median of the write-ups' clients), and each's.
    client_s: float = Field(ge=0)
    client_s_by_writeup: dict[str, float] = Field(default_factory=dict)
    host_us_per_token: float = Field(ge=0)
    # Output tokens of a write-up sweep request (never stated): a nuisance of the fit, bounded by write-up B's
    # counters and printed, not used to advise.
    sweep_output_tokens: int = Field(ge=1)
    sweep_output_bounds: tuple[int, int]
    provenance: Provenance
    errors: tuple[FittedError, ...]
    errors_leave_one_out: tuple[FittedError, ...]
    errors_by_kind: tuple[KindError, ...] = ()

    def factors(self, family: str) -> FamilyFactors:
        if family not in self.families:
            raise KeyError(f"no fitted factors for the {family!r} family; fitted: {', '.join(self.families)}")
        return self.families[family]

    def efficiency(self, hardware: Hardware, *, client: bool = True) -> Efficiency:
        """The factors for ``hardware``'s family; ``client`` False leaves out the time outside the server (a
        server-side figure, or a client in the serving region)."""
        return self.efficiency_of(
            self.factors(hardware.family), self.client_s if client else 0.0, self.host_us_per_token
        )

    @staticmethod
    def efficiency_of(family: FamilyFactors, client_s: float, host_us_per_token: float) -> Efficiency:
        """The latency model's ``Efficiency`` from a family's factors and the shared ones."""
        return Efficiency(
            compute=family.compute,
            bandwidth=family.bandwidth,
            client_s=client_s,
            step_s=family.step_ms / 1000,
            host_s_per_token=host_us_per_token * 1e-6,
        )

    def stated_error(self, family: str | None = None, kind: str | None = None) -> str:
        """One line an estimate carries: the fit's error on the kind of workload it answers (by family and
        kind where the fit has figures of it), and the leave-one-write-up-out error, which is the honest one."""
        for entry in self.errors_by_kind:
            if entry.family == family and entry.kind == kind and entry.median is not None:
                left_out = "" if entry.leave_one_out is None else f", {entry.leave_one_out:.0%} on a write-up left out"
                return f"{entry.family.upper()} {kind}: median |error| {entry.median:.0%} (n={entry.figures}){left_out}"
        parts = [f"{e.quantity} median {e.median:.0%} (n={e.figures})" for e in self.errors if e.median is not None]
        loo = [f"{e.quantity} {e.median:.0%}" for e in self.errors_leave_one_out if e.median is not None]
        if not parts:
            return "error unknown"
        return (
            "error against measured figures: "
            + ", ".join(parts)
            + ("; on a write-up left out of the fit: " + ", ".join(loo) if loo else "")
        )


@functools.cache
def fitted_efficiency() -> FittedEfficiency:
    """The efficiencies every estimate uses, read once."""
    return FittedEfficiency.model_validate_json(EFFICIENCY_FILE.read_text(encoding="utf-8"))
