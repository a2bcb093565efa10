"""How a GKE stack rolls a new template out: straight onto the serving pods, or onto a candidate track first.

Why a setting of its own: a gated rollout keeps two Deployment tracks (`blue`, `green`); the Service users
reach selects the serving one, a candidate Service the other, and a template change reaches only the
candidate, so it can be checked (health, a short bench) before users see it. The serving track is a plain
stack setting, known when the program runs, because which Deployment keeps its template must be a static
resource option (`ignore_changes`), not a value read from the stack's outputs. Default `direct`: the two
example stacks keep one Deployment (a gated fleet runs one more accelerator node for its candidate).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from stacks.base import SettingsModel

Track = Literal["blue", "green"]
TRACKS: tuple[Track, Track] = ("blue", "green")


class GkeRolloutSettings(SettingsModel):
    """`gke.rollout`: `gated: true` for two tracks; `servingTrack` names the one users reach."""

    gated: bool = False
    serving_track: Track = "blue"
    # Behind the inference gateway: the share of requests (percent) the HTTPRoute sends to the candidate's
    # pool. `verify promote` steps it up (and back to 0 on a failed gate); 0 keeps users on the serving track.
    candidate_percent: int = Field(default=0, ge=0, le=100)

    @model_validator(mode="after")
    def _track_needs_gate(self) -> Self:
        if self.candidate_percent and not self.gated:
            raise ValueError(
                "gke.rollout.candidatePercent applies only with gke.rollout.gated: true (a direct rollout has one "
                "track)"
            )
        if self.serving_track != "blue" and not self.gated:
            raise ValueError(
                "gke.rollout.servingTrack applies only with gke.rollout.gated: true (a direct rollout has one track)"
            )
        return self

    @property
    def candidate_track(self) -> Track:
        """The track a template change lands on: the one users do not reach."""
        return TRACKS[1] if self.serving_track == TRACKS[0] else TRACKS[0]
