"""When each request of an open-loop cell is sent: Poisson, constant or gamma (bursty) arrivals.

Why open loop: a closed loop ("c users") slows its own sending when the server slows, so it never
shows the queue that real traffic builds; production traffic, `vllm bench serve --request-rate`,
inference-perf and guidellm send at a rate regardless. The gaps between sends are drawn from a gamma
distribution as `vllm bench serve` draws them: shape = ``burstiness``, mean = 1 / rate; burstiness 1 is
Poisson (exponential gaps), below 1 burstier, above 1 more regular; ``constant`` is evenly spaced.

Why the drawn gaps are then scaled so the schedule's mean rate is exactly the one asked: 200 Poisson
arrivals have a mean rate that misses the asked one by about 7% (1/sqrt(n)) by chance alone, so a run
could not tell "the client fell behind" from "the dice were low". Scaling keeps the shape (the bursts
and the quiet gaps) and makes the achieved rate a test of the client and server, not of the seed.
Seeded: the same seed gives the same schedule, so two runs (or two servers) see the same bursts.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass

DEFAULT_SEED = 0


class ArrivalKind(enum.StrEnum):
    """``--arrival``: how the gaps between sends are drawn."""

    POISSON = "poisson"
    CONSTANT = "constant"
    GAMMA = "gamma"


@dataclass(frozen=True, slots=True)
class Arrivals:
    """A rate (requests/s), how the gaps are drawn, and the seed; ``burstiness`` applies to gamma only."""

    rate: float
    kind: ArrivalKind = ArrivalKind.POISSON
    burstiness: float = 1.0
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ValueError(f"--request-rate must be > 0 requests/s, got {self.rate}")
        if not self.burstiness > 0:
            raise ValueError(f"--burstiness must be > 0 (1 is Poisson, below 1 burstier), got {self.burstiness}")

    @property
    def shape(self) -> float:
        """The gamma shape of the gaps: 1 for Poisson, ``burstiness`` for gamma."""
        return self.burstiness if self.kind is ArrivalKind.GAMMA else 1.0

    def describe(self) -> str:
        """``poisson 20/s``, ``gamma 20/s (burstiness 0.5)``, ``constant 20/s``."""
        shown = f"{self.kind.value} {self.rate:g}/s"
        return f"{shown} (burstiness {self.burstiness:g})" if self.kind is ArrivalKind.GAMMA else shown

    def offsets(self, count: int) -> list[float]:
        """Seconds from the first send to each send; the first is 0 and the last ``(count - 1) / rate``."""
        if count <= 1:
            return [0.0] * count
        span = (count - 1) / self.rate
        if self.kind is ArrivalKind.CONSTANT:
            return [index / self.rate for index in range(count)]
        draw = random.Random(self.seed)  # noqa: S311 - a load schedule, not a secret
        gaps = [draw.gammavariate(self.shape, 1.0 / (self.shape * self.rate)) for _ in range(count - 1)]
        scale = span / sum(gaps)
        offsets = [0.0]
        for gap in gaps:
            offsets.append(offsets[-1] + gap * scale)
        offsets[-1] = span  # no rounding drift at the end
        return offsets
