"""PulumiTrackShifter against a stand-in for the Automation API's Stack (no Pulumi CLI here).

What matters to a user: the promoted track reaches the program as gke.rollout.servingTrack for a `pulumi up`
run with the policy packs, and a failed update puts the old track back in the stack file, so the next plain
`pulumi up` does not move users to a candidate that never finished its promotion.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from serving.rollout_keys import SERVING_TRACK_KEY, TRACK_SHARE_KEY
from verify.pulumi_gateway import PulumiTrackShifter
from verify.traffic import ShiftFailedError


class FakeStack:
    def __init__(self, *, fail: bool = False, track: str | None = "blue") -> None:
        self.fail = fail
        self.config: dict[str, str] = {} if track is None else {SERVING_TRACK_KEY: track}
        self.ups: list[dict[str, Any]] = []

    def get_config(self, key: str, *, path: bool = False) -> auto.ConfigValue:
        assert path
        if key not in self.config:
            raise auto.CommandError(auto.CommandResult(stdout="", stderr="not found", code=255))
        return auto.ConfigValue(self.config[key])

    def set_config(self, key: str, value: auto.ConfigValue, *, path: bool = False) -> None:
        assert path
        self.config[key] = value.value

    def remove_config(self, key: str, *, path: bool = False) -> None:
        assert path
        self.config.pop(key)

    def up(self, **kwargs: Any) -> None:
        self.ups.append({"config": dict(self.config), **kwargs})
        if self.fail:
            raise auto.CommandError(auto.CommandResult(stdout="", stderr="policy violation", code=255))


def shifter_for(stack: FakeStack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PulumiTrackShifter:
    def open_stack(name: str, work_dir: Path, env_vars: Mapping[str, str] | None = None) -> FakeStack:
        assert (name, work_dir) == ("org/gke-l4x4", tmp_path)
        return stack

    monkeypatch.setattr("verify.pulumi_gateway.open_stack", open_stack)
    return PulumiTrackShifter("org/gke-l4x4", work_dir=tmp_path, policy_packs=("policy",))


def test_the_track_reaches_the_update_and_stays(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The serving track is the stack's own setting: it must be set for the update and kept after it."""
    stack = FakeStack()
    shifter_for(stack, monkeypatch, tmp_path).serve("green", reason="passed")
    assert stack.ups[0]["config"] == {SERVING_TRACK_KEY: "green"}
    assert stack.ups[0]["policy_packs"] == ["policy"]
    assert stack.config == {SERVING_TRACK_KEY: "green"}


@pytest.mark.parametrize("before", ["blue", None])
def test_a_failed_update_puts_the_old_track_back(
    before: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A refused update must not leave the candidate named as serving for the next plain `pulumi up`."""
    stack = FakeStack(fail=True, track=before)
    with pytest.raises(ShiftFailedError, match="policy violation"):
        shifter_for(stack, monkeypatch, tmp_path).serve("green", reason="passed")
    assert stack.config == ({} if before is None else {SERVING_TRACK_KEY: before})


def test_a_step_sets_the_candidates_share_and_serving_clears_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Behind the gateway a step is one update of gke.rollout.candidatePercent; once the candidate serves, its
    old share must not carry over to the new candidate (the old serving track)."""
    stack = FakeStack()
    shifter = shifter_for(stack, monkeypatch, tmp_path)
    shifter.split(10, reason="step")
    assert stack.ups[0]["config"] == {SERVING_TRACK_KEY: "blue", TRACK_SHARE_KEY: "10"}
    shifter.serve("green", reason="passed")
    assert stack.config == {SERVING_TRACK_KEY: "green"}


def test_a_failed_step_puts_the_old_share_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A refused step must leave the route's weights as they were for the next plain `pulumi up`."""
    stack = FakeStack(fail=True)
    stack.config[TRACK_SHARE_KEY] = "10"
    with pytest.raises(ShiftFailedError, match="policy violation"):
        shifter_for(stack, monkeypatch, tmp_path).split(50, reason="step")
    assert stack.config == {SERVING_TRACK_KEY: "blue", TRACK_SHARE_KEY: "10"}
