"""TPU stack settings: each mistake fails with the key at fault and what is allowed, before anything queues."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.loading import settings_from_config
from stacks.settings import TpuStack
from stacks.tpu import TpuSettings, parse_duration
from tests.stacks.test_settings import config_with, problems_of


def tpu_config(**changes: Any) -> dict[str, str]:
    return config_with("tpu-v6e", **changes)


def test_the_tpu_stack_file_is_valid() -> None:
    """The shipped stack parses to v6e-1, flex-start 4h, internal only, tensor parallel 1."""
    settings = settings_from_config(tpu_config())
    assert isinstance(settings, TpuStack)
    assert settings.tpu.accelerator_type == "v6e-1"
    assert settings.tpu.provisioning.model.value == "flex-start"
    assert settings.tpu.provisioning.max_run_duration == 4 * 3600
    assert settings.tpu.public_endpoint is False
    assert settings.tpu.allowed_source_ranges == ()
    assert settings.vllm.tensor_parallel_size == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tpu__zone": "us-west1-a"}, "tpu.zone 'us-west1-a' has no TPU v6e; allowed: us-central1-b"),
        ({"tpu__publicEndpoint": True}, "publicEndpoint is true, so name the CIDRs allowed to reach the vLLM port"),
        ({"tpu__allowedSourceRanges": ["0.0.0.0/0"]}, "'0.0.0.0/0' would open the vLLM port to the whole internet"),
        ({"tpu__allowedSourceRanges": ["::/0"]}, "'::/0' would open the vLLM port to the whole internet"),
        ({"tpu__allowedSourceRanges": "10.0.0.0/8"}, "must be a list of CIDRs"),
        ({"tpu__allowedSourceRanges": ["10.1.2.3/8"]}, "is not a CIDR range"),
        ({"tpu__provisioning": {"model": "flex-start", "maxRunDuration": "8d"}}, "between 30m"),
        ({"tpu__provisioning": {"model": "flex-start", "maxRunDuration": "10m"}}, "between 30m"),
        ({"tpu__provisioning": {"model": "spot", "maxRunDuration": "4h"}}, "applies only to model flex-start"),
        ({"tpu__provisioning": {"model": "flex-start", "reservation": "r1"}}, "applies only to model guaranteed"),
        ({"tpu__provisioning": {"model": "on-demand"}}, "provisioning.model"),
        ({"tpu__provisioning": {"model": "flex-start", "maxRunDuration": "4 hours"}}, "is not a duration"),
        ({"tpu__acceleratorType": "v6e-16"}, "tpu.acceleratorType"),
        ({"tpu__activeDeadline": "1m"}, "tpu.activeDeadline 60s: allowed between 10m and 7d"),
        ({"tpu__maxRunDuraton": "4h"}, "unknown key (a typo?)"),
        ({"region": "us-central1"}, "region: 'us-central1' must be the region of tpu.zone 'us-east5-a'"),
        (
            {"vllm__tensorParallelSize": 4},
            "tensorParallelSize 4 exceeds the 1 chip(s) of tpu.acceleratorType v6e-1",
        ),
        ({"tpu": None}, "a tpu-v6e stack needs a tpu block"),
        ({"image": "vllm/vllm-tpu:nightly"}, "floating tag :nightly"),
        (
            {"registry": {"build": {"context": "images/vllm-gemma", "tag": "v0.32.0-gemma1"}}},
            "registry.build: a TPU node pulls its pinned image through the stack's Docker Hub mirror only",
        ),
    ],
)
def test_tpu_mistakes_name_the_key(changes: dict[str, Any], message: str) -> None:
    """A wrong zone, an open firewall or an unbounded run fails the preview with the key and the fix."""
    values = tpu_config(**changes)
    if changes == {"tpu": None}:
        values.pop("gemma-serving:tpu")
    assert message in problems_of(values)


def test_gpu_stack_refuses_a_tpu_block() -> None:
    """A tpu block in a Cloud Run stack is a mistake, not something silently ignored."""
    assert "only a tpu-v6e stack takes a tpu block" in problems_of(config_with("l4", tpu={"zone": "us-east5-a"}))


def test_other_tiers_and_zones() -> None:
    """Spot and guaranteed work in any v6e zone; a public endpoint with named ranges is accepted."""
    spot = TpuSettings.model_validate({"zone": "europe-west4-a", "provisioning": {"model": "spot"}})
    assert spot.provisioning.max_run_duration is None
    assert spot.region == "europe-west4"
    reserved = TpuSettings.model_validate(
        {"zone": "us-east5-b", "provisioning": {"model": "guaranteed", "reservation": "team-v6e"}}
    )
    assert reserved.provisioning.reservation == "team-v6e"
    public = TpuSettings.model_validate(
        {"zone": "us-east5-a", "publicEndpoint": True, "allowedSourceRanges": ["203.0.113.0/24", "2001:db8::/32"]}
    )
    assert public.allowed_source_ranges == ("203.0.113.0/24", "2001:db8::/32")


@pytest.mark.parametrize(("text", "seconds"), [("4h", 14400), ("90m", 5400), ("7d", 604800), ("3600s", 3600), (60, 60)])
def test_durations(text: str | int, seconds: int) -> None:
    """Durations read the way gcloud writes them (4h, 90m, 7d)."""
    assert parse_duration(text) == seconds
