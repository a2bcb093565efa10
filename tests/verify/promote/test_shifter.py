"""PulumiAutomationShifter against a stand-in for the Automation API's Stack (no Pulumi CLI here).

What matters to a user: the split reaches the program as the config keys it reads, the update runs with
the policy packs, and the keys never stay behind in the stack file (they would pin the split for every
later `pulumi up`), whether the update succeeded or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from serving.rollout_keys import (
    CANDIDATE_PERCENT_KEY,
    PREVIOUS_REVISION_KEY,
    PROMOTION_RUN_ENV,
    PROMOTION_RUN_KEY,
    SERVING_REVISION_KEY,
)
from verify.pulumi_gateway import PulumiAutomationShifter
from verify.traffic import ShiftFailedError, TrafficChange


class FakeStack:
    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.config: dict[str, str] = {}
        self.calls: list[tuple[str, Any]] = []
        self.env: dict[str, str] = {}

    def set_all_config(self, config: dict[str, auto.ConfigValue], *, path: bool = False) -> None:
        assert path, "the keys are paths inside gemma-serving:cloudRun"
        self.config.update({key: value.value for key, value in config.items()})
        self.calls.append(("set", dict(self.config)))

    def up(self, **kwargs: Any) -> None:
        self.calls.append(("up", {"config": dict(self.config), "env": dict(self.env), **kwargs}))
        if self.fail:
            raise auto.CommandError(auto.CommandResult(stdout="", stderr="policy violation", code=255))

    def remove_all_config(self, keys: list[str], *, path: bool = False) -> None:
        assert path
        for key in keys:
            self.config.pop(key)
        self.calls.append(("remove", list(keys)))


def shifter_with(stack: FakeStack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PulumiAutomationShifter:
    def open_stack(name: str, work_dir: Path, env_vars: Mapping[str, str] | None = None) -> FakeStack:
        assert name == "org/l4"
        assert work_dir == tmp_path
        stack.env = dict(env_vars or {})
        return stack

    monkeypatch.setattr("verify.pulumi_gateway.open_stack", open_stack)
    return PulumiAutomationShifter("org/l4", work_dir=tmp_path, policy_packs=["policy"], on_output=lambda _line: None)


def test_the_split_reaches_the_update_as_config_and_is_removed_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Guards against a promotion whose `pulumi up` never sees the split, or leaves it pinned in the stack file."""
    stack = FakeStack()
    shifter = shifter_with(stack, monkeypatch, tmp_path)

    shifter.apply(TrafficChange("gemma-l4-vllm-3f2a9c1b7e", 0, "gemma-l4-vllm-0a1b2c3d4e", reason="promote"))

    kind, up = stack.calls[1]
    assert kind == "up"
    run_id = up["config"].pop(PROMOTION_RUN_KEY)
    assert up["config"] == {
        SERVING_REVISION_KEY: "gemma-l4-vllm-3f2a9c1b7e",
        CANDIDATE_PERCENT_KEY: "0",
        PREVIOUS_REVISION_KEY: "gemma-l4-vllm-0a1b2c3d4e",
    }
    # Only this update carries the id the keys were written with: the program obeys them here and nowhere else.
    assert up["env"] == {PROMOTION_RUN_ENV: run_id}
    assert up["policy_packs"] == ["policy"]
    assert "verify promote: promote" in up["message"]
    assert stack.config == {}


def test_a_failed_update_is_reported_and_still_cleans_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Guards against a failed traffic update being taken for a success, or leaving its keys behind."""
    stack = FakeStack(fail=True)
    shifter = shifter_with(stack, monkeypatch, tmp_path)

    with pytest.raises(ShiftFailedError, match="`pulumi up` failed"):
        shifter.apply(TrafficChange("gemma-l4-vllm-0a1b2c3d4e", 10, None, reason="10%"))

    assert stack.config == {}
    assert ("remove", [SERVING_REVISION_KEY, CANDIDATE_PERCENT_KEY, PROMOTION_RUN_KEY]) in stack.calls


def test_each_update_gets_a_fresh_promotion_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Guards against an id that a later run could reuse: keys left by one killed run never match another's."""
    stack = FakeStack()
    shifter = shifter_with(stack, monkeypatch, tmp_path)
    shifter.apply(TrafficChange("gemma-l4-vllm-0a1b2c3d4e", 10, None, reason="10%"))
    shifter.apply(TrafficChange("gemma-l4-vllm-0a1b2c3d4e", 50, None, reason="50%"))
    ids = [call["env"][PROMOTION_RUN_ENV] for kind, call in stack.calls if kind == "up"]
    assert len(set(ids)) == 2
