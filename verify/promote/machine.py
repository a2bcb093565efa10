"""The promotion state machine: check the live service, gate the candidate, then move traffic in steps.

Invariant: traffic moves only after every gate passed, and each move is checked against what Cloud Run
then routes. A failure before the first move leaves the traffic exactly as it was; a failure after a
partial step sends the candidate's share back to the serving revision before exiting 1.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pydantic

from serving.naming import CANDIDATE_TAG
from verify import UsageError
from verify.ops.answers import RunService
from verify.promote.gates import GateName, GateResult, Gates
from verify.promote.outputs import RolloutOutputs
from verify.traffic import ShiftFailedError, TrafficChange, TrafficShifter

EXIT_OK = 0
EXIT_FAILED = 1


class Verdict(enum.StrEnum):
    """How a promotion ended, for people and for the MCP tool (which must not guess it from the exit code)."""

    PROMOTED = "promoted"  # the candidate serves 100%
    VERIFIED = "verified"  # first rollout: the candidate passed and already serves everything
    UNTOUCHED = "untouched"  # refused before any traffic moved
    HANDED_BACK = "handed-back"  # a later step failed; the serving revision has 100% again (checked)
    NOT_HANDED_BACK = "not-handed-back"  # a step failed and handing back failed or could not be checked
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"


@dataclass
class Outcome:
    """The verdict, what Cloud Run routed when last read (None: could not be read), why (``detail``: a refusal
    names the gate and the check that failed) and every gate's result with its command's report, in order."""

    verdict: Verdict | None = None
    routed: dict[str, int] | None = None
    detail: str = ""
    gates: list[GateResult] = field(default_factory=list)

    def report(self, stack: str, exit_code: int) -> PromotionReport:
        return PromotionReport(
            stack=stack, exit_code=exit_code, verdict=self.verdict, routed=self.routed, detail=self.detail
        )


class PromotionReport(pydantic.BaseModel):
    """What `verify promote --json` prints last: how the promotion ended and what Cloud Run routed when last
    read (None: could not be read). The MCP `promote` tool repeats it, never guessing from the exit code."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str
    exit_code: int
    verdict: Verdict | None
    routed: dict[str, int] | None = None
    detail: str = ""


@dataclass(frozen=True)
class Promotion:
    """What one promotion needs; every side effect is injected."""

    stack: str
    outputs: RolloutOutputs
    read_service: Callable[[], RunService]
    gates: Gates
    shifter: TrafficShifter
    say: Callable[[str], None]
    # Percent the candidate holds after each step; the last is always 100.
    steps: Sequence[int] = (100,)
    wait_s: float = 1800.0
    # Between steps the candidate already serves users: it answers now or it fails.
    step_wait_s: float = 60.0
    # The cold-start gate (verify/promote/coldstart_gate.py): revision -> why it is refused, or None.
    cold_start: Callable[[str], str | None] | None = None
    outcome: Outcome = field(default_factory=Outcome)

    def _end(self, verdict: Verdict, code: int, detail: str = "") -> int:
        self.outcome.verdict = verdict
        self.outcome.detail = detail
        return code

    def _read(self) -> RunService:
        service = self.read_service()
        self.outcome.routed = service.routed_percent()
        return service

    def _routed_now(self) -> dict[str, int] | None:
        """What Cloud Run routes now, or None (said) when the Admin API cannot be read."""
        try:
            return self._read().routed_percent()
        except UsageError as exc:
            self.outcome.routed = None
            self.say(f"could not read what Cloud Run routes now: {exc}")
            return None

    def promote(self) -> int:
        outputs = self.outputs
        candidate, serving = outputs.candidate_revision, outputs.serving_revision
        self.say(f"stack {self.stack}: serving {serving}, candidate {candidate} ({outputs.candidate_percent}%)")
        service = self._read()
        problem = candidate_problem(service, outputs) or traffic_drift(service, outputs)
        if problem:
            return self._refuse(problem)
        url = candidate_url(service)
        failed = self._gate(url, candidate)
        if failed:
            return self._refuse(failed)
        if outputs.first_rollout:
            self.say(
                f"passed: {candidate} already serves all traffic (the stack's first rollout, or a template that did "
                "not change), so there is no traffic to move"
            )
            return self._end(Verdict.VERIFIED, EXIT_OK)
        # A stepped promotion that was interrupted resumes above the share the candidate already has.
        for percent in [step for step in self.steps if step > outputs.candidate_percent]:
            code = self._step(percent, url)
            if code != EXIT_OK:
                return code
        self.say(
            f"promoted: {candidate} serves 100%; the previous revision {serving} stays deployed "
            f"(back to it: gemma-verify promote --stack {self.stack} --rollback)"
        )
        return self._end(Verdict.PROMOTED, EXIT_OK)

    def _cold_start_refusal(self, candidate: str) -> str | None:
        """The cold-start gate's verdict, once the candidate answered (so its start is in the logs)."""
        if self.cold_start is None:
            return None
        self.say("cold-start gate: the candidate's measured cold start against cloudRun.maxColdStartSeconds")
        return self.cold_start(candidate)

    def _gate(self, url: str, candidate: str) -> str | None:
        """Health, the cold-start gate, the metric gate, then the bench gate: why the candidate failed, or None."""
        return run_gates(
            self.gates,
            url,
            subject=f"the candidate {candidate}",
            label=f"promote-{candidate}",
            wait_s=self.wait_s,
            say=self.say,
            after_health=lambda: self._cold_start_refusal(candidate),
            kept=self.outcome.gates,
        )

    def rollback(self) -> int:
        outputs = self.outputs
        if outputs.candidate_percent > 0:
            # An interrupted stepped promotion: the serving revision never stopped serving; take the share back.
            target, previous = outputs.serving_revision, outputs.previous_revision
        elif outputs.previous_revision is None:
            self.outcome.verdict = Verdict.ROLLBACK_FAILED
            return self._refuse(
                f"stack {self.stack} records no previous revision (nothing was promoted since the first rollout)"
            )
        else:
            target, previous = outputs.previous_revision, outputs.serving_revision
        self.say(f"rollback: {target} takes 100% of the traffic (from {outputs.serving_revision})")
        change = TrafficChange(target, 0, previous, reason=f"rollback to {target}")
        try:
            self.shifter.apply(change)
        except ShiftFailedError as exc:
            self.say(f"FAILED: {exc}; {_routes_text(self._routed_now())}")
            return self._end(Verdict.ROLLBACK_FAILED, EXIT_FAILED, str(exc))
        mismatch = routed_mismatch(self._read(), {target: 100})
        if mismatch:
            self.say(f"FAILED: after the rollback {mismatch}")
            return self._end(Verdict.ROLLBACK_FAILED, EXIT_FAILED, mismatch)
        self.say(f"rolled back: {target} serves 100%")
        return self._end(Verdict.ROLLED_BACK, EXIT_OK)

    def _step(self, percent: int, candidate_url: str) -> int:
        outputs = self.outputs
        candidate, serving = outputs.candidate_revision, outputs.serving_revision
        if percent < 100:
            change = TrafficChange(serving, percent, outputs.previous_revision, f"{candidate} takes {percent}%")
            expected = {serving: 100 - percent, candidate: percent}
        else:
            change = TrafficChange(candidate, 0, serving, reason=f"promote {candidate}")
            expected = {candidate: 100}
        self.say(f"traffic: {change.describe(candidate)}")
        before = dict(self.outcome.routed or {})
        try:
            self.shifter.apply(change)
        except ShiftFailedError as exc:
            # A failed update may still have moved traffic, and an earlier step surely did: look, then hand back.
            routed = self._routed_now()
            untouched = {outputs.serving_revision: 100 - outputs.candidate_percent}
            if routed is not None and routed == before and before == _positive(untouched, candidate, outputs):
                self.say(f"FAILED: {exc}")
                return self._refuse(f"the update that was to move traffic failed ({_routes_text(routed)})")
            return self._step_back(f"the update to {percent}% failed ({exc})")
        mismatch = routed_mismatch(self._read(), expected)
        if mismatch:
            return self._step_back(f"after moving traffic {mismatch}")
        if percent < 100:
            self.say(f"health check of the candidate while it serves {percent}%")
            result = self.gates.health(candidate_url, wait_s=self.step_wait_s)
            self.outcome.gates.append(result)
            if not result.passed:
                return self._step_back(
                    f"the candidate failed verify health at {percent}% (exit {result.exit_code})" + _named(result)
                )
        return EXIT_OK

    def _step_back(self, why: str) -> int:
        """Hand the candidate's share back to the serving revision, check it, and say exactly what serves."""
        serving = self.outputs.serving_revision
        self.say(f"FAILED: {why}; sending all traffic back to {serving}")
        try:
            self.shifter.apply(TrafficChange(serving, 0, self.outputs.previous_revision, f"{why}: back to {serving}"))
        except ShiftFailedError as exc:
            routed = self._routed_now()
            self.say(
                f"FAILED to move traffic back: {exc}; {_routes_text(routed)}; run gemma-verify promote "
                f"--stack {self.stack} --rollback"
            )
            return self._end(Verdict.NOT_HANDED_BACK, EXIT_FAILED, why)
        routed = self._routed_now()
        if routed != {serving: 100}:
            self.say(
                f"FAILED to confirm the hand-back: {_routes_text(routed)}; run gemma-verify promote "
                f"--stack {self.stack} --rollback"
            )
            return self._end(Verdict.NOT_HANDED_BACK, EXIT_FAILED, why)
        self.say(f"traffic handed back: {serving} serves 100%")
        return self._end(Verdict.HANDED_BACK, EXIT_FAILED, why)

    def _refuse(self, why: str) -> int:
        self.say(f"FAILED: {why}")
        self.say(f"traffic untouched: {self.outputs.serving_revision} keeps serving as before")
        if self.outcome.verdict is None:
            self.outcome.verdict = Verdict.UNTOUCHED
        self.outcome.detail = why
        return EXIT_FAILED


def candidate_problem(service: RunService, outputs: RolloutOutputs) -> str | None:
    """Why the candidate cannot be verified yet, or None when it is ready under its tag."""
    candidate = outputs.candidate_revision
    if service.reconciling:
        return "Cloud Run is still reconciling the service (an update is in progress); wait for it and retry"
    if service.ready_revision() != candidate:
        condition = service.terminal_condition
        detail = f": {condition.message}" if condition.message else ""
        if service.created_revision() == candidate:
            return f"the candidate revision {candidate} never became ready{detail}"
        return (
            f"Cloud Run's latest ready revision is {service.ready_revision()}, not the stack's candidate {candidate}: "
            "the stack's state is not what is deployed (run `pulumi up` for this commit)"
        )
    tagged = service.tagged(CANDIDATE_TAG)
    if tagged is None or not tagged.uri:
        return (
            f"the service has no {CANDIDATE_TAG!r} tag with a URL: was the last `pulumi up` gated (cloudRun.rollout)?"
        )
    if tagged.revision and tagged.revision.rsplit("/", 1)[-1] != candidate:
        return f"the {CANDIDATE_TAG!r} tag names {tagged.revision}, not the stack's candidate {candidate}"
    return None


def candidate_url(service: RunService) -> str:
    """The candidate tag's own URL; only called once ``candidate_problem`` found none."""
    tagged = service.tagged(CANDIDATE_TAG)
    if tagged is None or not tagged.uri:
        raise ValueError(f"the service has no {CANDIDATE_TAG!r} tag with a URL")
    return tagged.uri


def traffic_drift(service: RunService, outputs: RolloutOutputs) -> str | None:
    """Refuse to move traffic that is not where Pulumi's state says it is."""
    percent = outputs.candidate_percent if not outputs.first_rollout else 100
    expected = {outputs.serving_revision: 100 - percent, outputs.candidate_revision: percent}
    mismatch = routed_mismatch(service, expected)
    if mismatch is None:
        return None
    return f"the live traffic differs from the stack's state: {mismatch} (run `pulumi up` to restore it first)"


def routed_mismatch(service: RunService, expected: dict[str, int]) -> str | None:
    wanted = {revision: share for revision, share in expected.items() if share > 0}
    routed = service.routed_percent()
    if routed == wanted:
        return None
    return f"Cloud Run routes {_split(routed)}, expected {_split(wanted)}"


def run_gates(
    gates: Gates,
    url: str,
    *,
    subject: str,
    label: str,
    wait_s: float,
    say: Callable[[str], None],
    after_health: Callable[[], str | None] | None = None,
    kept: list[GateResult] | None = None,
) -> str | None:
    """verify health, `after_health` (a platform's own check), the metric gate, then a short verify bench
    against `url`: why `subject` failed (naming the gate and the check), or None. Each gate's result is
    appended to `kept`. Shared by Cloud Run revisions and GKE tracks, so both pass the same gates in the
    same order."""
    results = kept if kept is not None else []
    say(f"gate 1/2: verify health against {subject} at {url}")
    health = gates.health(url, wait_s=wait_s)
    results.append(health)
    if not health.passed:
        return _refusal(subject, health)
    refused = after_health() if after_health is not None else None
    if refused:
        return refused
    # After health: by then the candidate has answered requests, so its HTTP metrics exist too.
    say("metric gate: the candidate exports every vLLM metric the stack's dashboard and alerts read")
    metrics = gates.metrics(url)
    results.append(metrics)
    if not metrics.passed:
        return _refusal(subject, metrics)
    adapters = gates.adapters(url)
    if adapters is not None:
        say("adapter gate: every declared LoRA adapter answers its probes as itself")
        results.append(adapters)
        if not adapters.passed:
            return _refusal(subject, adapters)
    say("gate 2/2: verify bench with the stack's SLO gates against the candidate")
    bench = gates.bench(url, label=label)
    results.append(bench)
    if not bench.passed:
        return _refusal(subject, bench)
    return None


_GATE_TITLES = {
    GateName.HEALTH: "verify health",
    GateName.METRICS: "the metric gate",
    GateName.ADAPTERS: "the adapter gate (gemma-verify adapters check)",
    GateName.BENCH: "verify bench",
}


def _refusal(subject: str, result: GateResult) -> str:
    return f"{subject} failed {_GATE_TITLES[result.gate]} ({gate_verdict(result.exit_code)})" + _named(result)


def _named(result: GateResult) -> str:
    """What failed inside the gate, after the gate's own verdict."""
    return f": {result.failure}" if result.failure else ""


def gate_verdict(code: int) -> str:
    """What a gate's exit code means; every failed gate fails the promotion (exit 1), whatever its cause."""
    if code == 1:
        return "exit 1: a check or an SLO failed"
    if code == 2:
        return "exit 2: unreachable, not ready within --wait, or the credential was refused"
    return f"exit {code}"


def _positive(split: dict[str, int], candidate: str, outputs: RolloutOutputs) -> dict[str, int]:
    """The split as Cloud Run reports it: revisions with a share only (the candidate's own share included)."""
    full = {**split, candidate: outputs.candidate_percent} if outputs.candidate_percent else split
    return {revision: share for revision, share in full.items() if share > 0}


def _routes_text(routed: dict[str, int] | None) -> str:
    if routed is None:
        return "what Cloud Run routes now could not be read (gemma-verify status shows it)"
    return f"Cloud Run routes {_split(routed)} now"


def _split(split: dict[str, int]) -> str:
    return ", ".join(f"{revision} {share}%" for revision, share in sorted(split.items())) or "nothing"
