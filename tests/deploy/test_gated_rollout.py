"""Gated rollouts in the offline plan of each GPU stack: the traffic entries, the tag, the revision name.

What a reviewer must be able to read off a plan: the revision that serves keeps its share, the new one
arrives under the `candidate` tag with 0%, and only `python -m verify promote` (through the
`cloudRun.traffic` keys it sets for one update) or `cloudRun.rollout: direct` changes that.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from preview.capture import OFFLINE_STACK_STATE, Capture
from preview.render import COMPUTED, clean, text_plan
from serving.rollout_keys import PROMOTION_RUN_ENV
from tests.conftest import render_stack, stack_config
from tests.stacks.test_settings import config_with, problems_of

GPU_STACKS = ("l4", "rtx6000")
SERVICE = "gcp:cloudrunv2/service:Service"
BY_REVISION = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
STATE_SERVING = OFFLINE_STACK_STATE["servingRevision"]
RUN_ID = "0123456789abcdef0123456789abcdef"


def render(stack: str, *, cloud_run: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> Capture:
    """The whole program for a stack file, with cloudRun keys merged in and a given stack state."""
    key = "gemma-serving:cloudRun"
    overrides = {key: json.dumps({**json.loads(stack_config(stack).values[key]), **cloud_run})} if cloud_run else None
    return render_stack(stack, overrides, stack_state=state)


def service(capture: Capture) -> dict[str, Any]:
    return dict(clean(capture.one(SERVICE).inputs))


@pytest.mark.parametrize("stack", GPU_STACKS)
def test_a_new_revision_arrives_as_the_candidate_with_no_traffic(stack: str) -> None:
    """Guards against `pulumi up` sending users to a revision nobody verified (the old default)."""
    capture = render(stack)
    inputs = service(capture)

    assert inputs["name"] == f"gemma-{stack}-vllm"  # fixed, so revision names can be derived from it
    assert inputs["traffics"] == [
        {"type": BY_REVISION, "revision": STATE_SERVING, "percent": 100},
        {"type": BY_REVISION, "revision": COMPUTED, "percent": 0, "tag": "candidate"},
    ]
    # The template names its revision (computed here: the bucket's name is only known to Google).
    assert inputs["template"]["revision"] == COMPUTED
    outputs = clean(capture.outputs)
    assert outputs["rollout"] == "gated"
    assert outputs["servingRevision"] == STATE_SERVING
    assert outputs["candidatePercent"] == 0
    assert {"cloudRunService", "candidateRevision", "candidateUrl", "previousRevision"} <= set(outputs)


def test_the_text_plan_shows_the_gated_split() -> None:
    """Guards against a reviewer having to read JSON to see that the new revision will not serve yet."""
    capture = render("l4")
    text = text_plan(capture, stack="l4", project="gemma-serving", notes=[])

    traffic = next(line for line in text.splitlines() if line.strip().startswith("Traffic:"))
    assert f"{STATE_SERVING} 100%" in traffic
    assert "gemma-l4-vllm-<hash of the template> 0% (tag candidate: https://candidate---<service host>)" in traffic
    assert "verify promote" in traffic


def test_the_first_rollout_serves_the_candidate() -> None:
    """Guards against a first deployment whose only revision gets 0% and leaves the service serving nothing."""
    inputs = service(render("l4", state={}))

    assert inputs["traffics"] == [{"type": BY_REVISION, "revision": COMPUTED, "percent": 100, "tag": "candidate"}]


def promotions_own(traffic: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keys as `verify promote` writes them, in the update it runs itself (the same id in its env)."""
    monkeypatch.setenv(PROMOTION_RUN_ENV, RUN_ID)
    return {"traffic": {**traffic, "promotionRun": RUN_ID}}


def test_a_stepped_promotion_gives_the_candidate_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards against promotion's config (one `pulumi up` per step) not reaching the traffic split."""
    capture = render(
        "l4",
        cloud_run=promotions_own({"servingRevision": "gemma-l4-vllm-0a1b2c3d4e", "candidatePercent": 10}, monkeypatch),
    )
    inputs = service(capture)

    assert inputs["traffics"] == [
        {"type": BY_REVISION, "revision": "gemma-l4-vllm-0a1b2c3d4e", "percent": 90},
        {"type": BY_REVISION, "revision": COMPUTED, "percent": 10, "tag": "candidate"},
    ]
    assert clean(capture.outputs)["candidatePercent"] == 10


def test_promotion_config_wins_over_the_stack_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards against a promotion's `pulumi up` silently keeping the old revision (the state's) serving."""
    capture = render(
        "l4",
        cloud_run=promotions_own(
            {"servingRevision": "gemma-l4-vllm-3f2a9c1b7e", "previousRevision": "gemma-l4-vllm-0a1b2c3d4e"},
            monkeypatch,
        ),
        state={"servingRevision": "gemma-l4-vllm-0a1b2c3d4e"},
    )
    outputs = clean(capture.outputs)

    assert service(capture)["traffics"][0] == {
        "type": BY_REVISION,
        "revision": "gemma-l4-vllm-3f2a9c1b7e",
        "percent": 100,
    }
    assert outputs["servingRevision"] == "gemma-l4-vllm-3f2a9c1b7e"
    assert outputs["previousRevision"] == "gemma-l4-vllm-0a1b2c3d4e"


LEFTOVER = {"servingRevision": "gemma-l4-vllm-3f2a9c1b7e", "candidatePercent": 10, "promotionRun": RUN_ID}


@pytest.mark.parametrize(
    ("traffic", "environment"),
    [
        pytest.param(LEFTOVER, None, id="keys of a killed promotion, plain pulumi up"),
        pytest.param({**LEFTOVER, "promotionRun": None}, None, id="keys without an id (an older promotion)"),
        pytest.param(LEFTOVER, "f" * 32, id="another promotion's id"),
    ],
)
def test_traffic_keys_left_by_a_killed_promotion_are_inert_for_a_plain_pulumi_up(
    traffic: dict[str, Any], environment: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A promotion killed during its traffic update (SIGKILL, a cancelled CI job, the MCP runner's kill) leaves
    cloudRun.traffic keys in the stack file; the next plain `pulumi up` gave the candidate of whatever template
    it deployed that share of the users, ungated. The keys are ignored now (with a warning naming them), and
    traffic stays as the stack's state says."""
    if environment is None:
        monkeypatch.delenv(PROMOTION_RUN_ENV, raising=False)
    else:
        monkeypatch.setenv(PROMOTION_RUN_ENV, environment)
    cleaned = {key: value for key, value in traffic.items() if value is not None}
    capture = render("l4", cloud_run={"traffic": cleaned}, state={"servingRevision": "gemma-l4-vllm-0a1b2c3d4e"})
    inputs = service(capture)

    assert inputs["traffics"] == [
        {"type": BY_REVISION, "revision": "gemma-l4-vllm-0a1b2c3d4e", "percent": 100},
        {"type": BY_REVISION, "revision": COMPUTED, "percent": 0, "tag": "candidate"},
    ]
    assert clean(capture.outputs)["candidatePercent"] == 0
    assert any("left by an interrupted `gemma-verify promote`" in message for _severity, message in capture.logs)


def test_direct_rollout_is_one_line_away() -> None:
    """Guards against the way back to `every update serves at once` needing more than cloudRun.rollout."""
    capture = render("l4", cloud_run={"rollout": "direct"})
    inputs = service(capture)

    assert inputs["traffics"] == [{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}]
    outputs = clean(capture.outputs)
    assert outputs["rollout"] == "direct"
    assert outputs["candidateUrl"] is None


def test_rollout_accepts_only_gated_or_direct() -> None:
    """Guards against a typo such as `canary` silently meaning one of the two."""
    message = problems_of(config_with(cloudRun__rollout="canary"))
    assert "cloudRun.rollout" in message
    assert "'gated' or 'direct'" in message


def test_traffic_keys_with_a_direct_rollout_are_refused() -> None:
    """Guards against a leftover promotion split that a direct rollout would silently ignore."""
    message = problems_of(config_with(cloudRun__rollout="direct", cloudRun__traffic={"candidatePercent": 10}))
    assert "cloudRun.traffic is the traffic split of a gated rollout" in message


@pytest.mark.parametrize(
    ("traffic", "expected"),
    [
        ({"servingRevision": "Gemma_L4"}, "is not a Cloud Run revision name"),
        ({"candidatePercent": 100}, "cloudRun.traffic.candidatePercent: Input should be less than or equal to 99"),
        ({"servingRevison": "gemma-l4-vllm-0a1b2c3d4e"}, "servingRevison"),
    ],
)
def test_bad_traffic_keys_name_the_key(traffic: dict[str, object], expected: str) -> None:
    """Guards against a hand-edited split reaching Cloud Run (which would reject it mid-update)."""
    assert expected in problems_of(config_with(cloudRun__traffic=traffic))
