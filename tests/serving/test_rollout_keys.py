"""The config keys `gemma-verify promote` writes are keys the program reads (serving/rollout_keys.py).

A key promotion spelt one way and the settings another would make every promotion step inert: the update
would run, the program would ignore the key, and the traffic would stay where it was.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from serving.rollout_keys import (
    CANDIDATE_PERCENT_KEY,
    CONFIG_NAMESPACE,
    PREVIOUS_REVISION_KEY,
    PROMOTION_RUN_KEY,
    SERVING_REVISION_KEY,
    SERVING_TRACK_KEY,
    TRACK_SHARE_KEY,
)
from stacks.cloud_run import CloudRunSettings, TrafficSettings
from stacks.gke_rollout import GkeRolloutSettings
from stacks.loading import PROJECT


@pytest.mark.parametrize(
    ("key", "block", "model", "value"),
    [
        (SERVING_REVISION_KEY, "cloudRun.traffic", TrafficSettings, "gemma-l4-vllm-0a1b2c3d4e"),
        (PREVIOUS_REVISION_KEY, "cloudRun.traffic", TrafficSettings, "gemma-l4-vllm-0a1b2c3d4e"),
        (CANDIDATE_PERCENT_KEY, "cloudRun.traffic", TrafficSettings, 10),
        (PROMOTION_RUN_KEY, "cloudRun.traffic", TrafficSettings, "0123456789abcdef"),
        (SERVING_TRACK_KEY, "gke.rollout", GkeRolloutSettings, "green"),
        (TRACK_SHARE_KEY, "gke.rollout", GkeRolloutSettings, 10),
    ],
)
def test_each_key_is_a_field_of_the_settings_that_read_it(
    key: str, block: str, model: type[BaseModel], value: object
) -> None:
    """Guards against a promotion key the program ignores (a step that moves no traffic)."""
    namespace, _, path = key.partition(":")
    assert namespace == CONFIG_NAMESPACE == PROJECT
    assert path.rpartition(".")[0] == block
    field = path.rpartition(".")[2]
    extra = {"gated": True} if model is GkeRolloutSettings else {}
    parsed = model.model_validate({field: value, **extra}).model_dump(by_alias=True)
    assert parsed[field] == value


def test_the_traffic_block_is_where_the_cloud_run_settings_read_it() -> None:
    """Guards against the keys naming a block the Cloud Run settings do not have."""
    assert "traffic" in CloudRunSettings.model_fields
