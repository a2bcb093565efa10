"""`verify promote` for a gated GKE fleet: gate the candidate track, then point the user Service at it.

Why its own module: on GKE the candidate is a Deployment track behind its own internal Service
(components/gke/tracks.py), not a tagged revision; promotion checks it through that Service with the same
gates as Cloud Run (verify health, the metric gate, a short verify bench) and moves users with one
`pulumi up` that sets `gke.rollout.servingTrack` to the candidate. Unlike Cloud Run's transient
`cloudRun.traffic.*` keys (which override state and so need the promotion-run marker), the serving track is
the stack's own setting: the program must know it when it runs, because it decides which Deployment ignores
template changes. So the setting stays after promotion, and a failed `pulumi up` puts the old value back
(`PulumiTrackShifter` in verify/pulumi_gateway.py, the one module that talks to Pulumi).
A failed gate changes nothing: no config is written, no update runs.

Behind the inference gateway (the fleet exports `gatewayEndpoint`), users move in steps: after the candidate
passed its gates, `gke.rollout.candidatePercent` takes each of STEPS (one `pulumi up` each: the HTTPRoute's
weights between the two tracks' InferencePools), and the same gates run against the gateway, which now
sends that share to the candidate. A failed step rolls back (candidatePercent 0: every request to the
serving track again); after the last step the candidate becomes the serving track with candidatePercent 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from serving.outputs import DeployedOutputs
from verify import UsageError
from verify.promote.gates import Gates
from verify.promote.machine import EXIT_FAILED, EXIT_OK, Outcome, Verdict, run_gates
from verify.traffic import ShiftFailedError

# The candidate's share of requests (percent) at each step behind the gateway, before it serves everything.
STEPS: tuple[int, ...] = (10, 50)


@dataclass(frozen=True)
class GkeRollout:
    """What a gated fleet exports for promotion (serving.outputs.GkeOutputs, gated fields)."""

    serving_track: str
    candidate_track: str
    candidate_endpoint: str | None
    candidate_port_forward: str | None
    # Behind the inference gateway: its address (the weighted HTTPRoute), for the stepped split.
    gateway_endpoint: str | None = None


def is_gke(outputs: DeployedOutputs) -> bool:
    return outputs.platform == "gke"


def gke_rollout(stack: str, outputs: DeployedOutputs) -> GkeRollout:
    """The gated fields; a direct fleet (no servingTrack output) is a usage error naming the setting."""
    if outputs.serving_track is None or outputs.candidate_track is None:
        raise UsageError(
            f"stack {stack!r} rolls out directly (no servingTrack output): every `pulumi up` rolls the pods users "
            "reach; set gke.rollout.gated: true and run `pulumi up` to get a candidate track to promote"
        )
    return GkeRollout(
        serving_track=outputs.serving_track,
        candidate_track=outputs.candidate_track,
        candidate_endpoint=outputs.candidate_endpoint or None,
        candidate_port_forward=outputs.candidate_port_forward,
        gateway_endpoint=outputs.gateway_endpoint or None,
    )


class TrackShifter(Protocol):
    """Makes `track` the serving one and returns once the update finished (raising ShiftFailedError)."""

    def serve(self, track: str, *, reason: str) -> None: ...

    def split(self, percent: int, *, reason: str) -> None:
        """Sends `percent` of the gateway's requests to the candidate track (0: none) and returns once applied."""
        ...


@dataclass(frozen=True)
class GkePromotion:
    """Gate the candidate track through its Service, then make it serve; every side effect is injected."""

    stack: str
    rollout: GkeRollout
    gates: Gates
    shifter: TrackShifter
    say: Callable[[str], None]
    wait_s: float = 1800.0
    # The candidate's address when its internal endpoint is not reachable from here (a port-forward).
    candidate_url: str | None = None
    steps: tuple[int, ...] = STEPS
    outcome: Outcome = field(default_factory=Outcome)

    def promote(self) -> int:
        serving, candidate = self.rollout.serving_track, self.rollout.candidate_track
        url = self.candidate_url or self.rollout.candidate_endpoint
        if url is None:
            raise UsageError(
                f"stack {self.stack!r}: the candidate Service has no address yet; reach it with "
                f"`{self.rollout.candidate_port_forward or 'kubectl port-forward'}` and pass "
                "--candidate-url http://127.0.0.1:<port>"
            )
        self.say(f"stack {self.stack}: serving track {serving}, candidate track {candidate} at {url}")
        failed = run_gates(
            self.gates,
            url,
            subject=f"track {candidate}",
            label=f"promote-{self.stack}-{candidate}",
            wait_s=self.wait_s,
            say=self.say,
            kept=self.outcome.gates,
        )
        if failed:
            self.say(f"not promoted: {failed}; users stay on track {serving}, nothing was changed")
            return self._end(Verdict.UNTOUCHED, EXIT_FAILED, failed)
        if self.rollout.gateway_endpoint is not None:
            stopped = self._stepped(self.rollout.gateway_endpoint)
            if stopped is not None:
                return stopped
        self.say(f"gates passed: setting gke.rollout.servingTrack to {candidate} (pulumi up)")
        try:
            self.shifter.serve(candidate, reason=f"candidate track {candidate} passed health and bench")
        except ShiftFailedError as exc:
            detail = f"{exc}; gke.rollout.servingTrack was set back to {serving}: check the stack's state"
            self.say(detail)
            return self._end(Verdict.NOT_HANDED_BACK, EXIT_FAILED, detail)
        self.say(f"promoted: the Service sends users to track {candidate}; track {serving} is the next candidate")
        return self._end(Verdict.PROMOTED, EXIT_OK)

    def _stepped(self, gateway: str) -> int | None:
        """Each step's share to the candidate through the gateway, gated; the exit code if a step failed."""
        serving, candidate = self.rollout.serving_track, self.rollout.candidate_track
        for percent in self.steps:
            self.say(f"step: {percent}% of requests to track {candidate} through the gateway (pulumi up)")
            try:
                self.shifter.split(percent, reason=f"verify promote: {percent}% to candidate track {candidate}")
            except ShiftFailedError as exc:
                return self._roll_back(f"setting {percent}% failed: {exc}")
            failed = run_gates(
                self.gates,
                gateway,
                subject=f"the gateway with {percent}% on track {candidate}",
                label=f"promote-{self.stack}-{candidate}-{percent}",
                wait_s=self.wait_s,
                say=self.say,
                kept=self.outcome.gates,
            )
            if failed:
                return self._roll_back(failed)
        self.say(f"every step passed; track {serving} keeps {100 - self.steps[-1]}% until the switch")
        return None

    def _roll_back(self, why: str) -> int:
        serving = self.rollout.serving_track
        self.say(f"rolling back: {why}; every request to track {serving} again (candidatePercent 0)")
        try:
            self.shifter.split(0, reason=f"verify promote rollback: {why}")
        except ShiftFailedError as exc:
            detail = f"{why}; the rollback failed too: {exc}; set gke.rollout.candidatePercent to 0 and run pulumi up"
            self.say(detail)
            return self._end(Verdict.ROLLBACK_FAILED, EXIT_FAILED, detail)
        return self._end(Verdict.ROLLED_BACK, EXIT_FAILED, why)

    def _end(self, verdict: Verdict, code: int, detail: str = "") -> int:
        self.outcome.verdict = verdict
        self.outcome.detail = detail
        return code
