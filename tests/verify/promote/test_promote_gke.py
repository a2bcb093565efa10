"""`python -m verify promote` for a gated GKE fleet, against a local vLLM-shaped server standing in for the
candidate Service and a fake shifter standing in for `pulumi up`.

What a user relies on: users move to the candidate track only after health and a short bench passed
against the candidate's own pods, and a failed gate changes nothing (no config written, no update run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_pulumi import FakeStackOutputs
from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify import UsageError
from verify.cli import build_parser
from verify.promote.cli import run_promote_command
from verify.promote.run import Seams

API_KEY = "candidate-test-key"
STACK = "gke-l4x4"
CANDIDATE_SERVICE = "gemma-gke-l4x4-vllm-candidate"


def gke_outputs(candidate_endpoint: str, **overrides: Any) -> dict[str, Any]:
    outputs: dict[str, Any] = {
        "platform": "gke",
        "endpoint": "http://10.128.0.7:8000",
        "servedModelName": "tiny-gemma",
        "authKind": "api-key",
        "accelerator": "nvidia-l4",
        "servingTrack": "blue",
        "candidateTrack": "green",
        "candidateEndpoint": candidate_endpoint,
        "candidatePortForward": f"kubectl port-forward --namespace gemma service/{CANDIDATE_SERVICE} 8000:8000",
    }
    outputs.update(overrides)
    return outputs


class TrackRecorder:
    """Stands in for `pulumi up` with gke.rollout.servingTrack set: records each track it was asked to serve."""

    def __init__(self) -> None:
        self.served: list[str] = []
        self.splits: list[int] = []

    def serve(self, track: str, *, reason: str) -> None:
        assert reason
        self.served.append(track)

    def split(self, percent: int, *, reason: str) -> None:
        assert reason
        self.splits.append(percent)


def promote(outputs: dict[str, Any], tmp_path: Path, shifter: TrackRecorder, lines: list[str], *flags: str) -> int:
    args = build_parser().parse_args(
        [
            "promote",
            "--stack",
            STACK,
            *("--bench-concurrency", "1", "--bench-context", "16", "--bench-max-tokens", "3"),
            *("--bench-requests", "2", "--bench-warmup", "0", "--bench-output-dir", str(tmp_path / "bench")),
            *("--wait", "0.3"),
            *flags,
        ]
    )
    return run_promote_command(
        args, Seams(pulumi=FakeStackOutputs({STACK: outputs}), track_shifter=shifter, say=lines.append)
    )


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)


def test_a_passing_candidate_track_takes_the_users(tmp_path: Path) -> None:
    """Health and bench run against the candidate Service; then, and only then, the serving track moves."""
    shifter, lines = TrackRecorder(), list[str]()
    config = FakeVllmConfig(api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True)
    with running(config) as candidate:
        code = promote(gke_outputs(candidate.url), tmp_path, shifter, lines)
        chats = sum(1 for request in candidate.requests if request.path == "/v1/chat/completions")
    assert code == 0, lines
    assert shifter.served == ["green"]
    assert chats >= 2  # the bench ran against the candidate's own pods
    assert any("promoted" in line for line in lines)


def test_a_failing_candidate_track_leaves_users_where_they_were(tmp_path: Path) -> None:
    """A candidate that never becomes healthy must not be promoted: no `pulumi up`, exit 1, the reason said."""
    shifter, lines = TrackRecorder(), list[str]()
    config = FakeVllmConfig(api_key=API_KEY, always_status={"/health": 503})
    with running(config) as candidate:
        code = promote(gke_outputs(candidate.url), tmp_path, shifter, lines)
    assert code == 1
    assert shifter.served == []
    assert any("users stay on track blue" in line for line in lines)


def test_a_candidate_failing_the_bench_slo_is_not_promoted(tmp_path: Path) -> None:
    """Healthy is not enough: a candidate that misses the bench SLO keeps users on the serving track."""
    shifter, lines = TrackRecorder(), list[str]()
    config = FakeVllmConfig(
        api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True, ttft_s=0.005
    )
    with running(config) as candidate:
        code = promote(gke_outputs(candidate.url), tmp_path, shifter, lines, "--slo", "mean_ttft_ms=1")
    assert code == 1, lines
    assert shifter.served == []
    assert any("failed verify bench" in line for line in lines)


def test_a_direct_fleet_has_nothing_to_promote(tmp_path: Path) -> None:
    """A direct fleet exports no tracks: promotion refuses (exit 2) and names the setting, touching nothing."""
    shifter = TrackRecorder()
    outputs = {key: value for key, value in gke_outputs("").items() if "Track" not in key}
    with pytest.raises(UsageError, match=r"gke\.rollout\.gated: true"):
        promote(outputs, tmp_path, shifter, [])
    assert shifter.served == []


def test_an_unreachable_candidate_names_the_port_forward(tmp_path: Path) -> None:
    """The candidate Service is internal: with no address the user is told how to reach it."""
    with pytest.raises(UsageError, match="service/gemma-gke-l4x4-vllm-candidate"):
        promote(gke_outputs(""), tmp_path, TrackRecorder(), [])


def test_behind_the_gateway_users_move_in_steps(tmp_path: Path) -> None:
    """The candidate passes its own gates, then takes 10% and 50% of the gateway's requests (each step gated
    through the gateway) before it becomes the serving track."""
    shifter, lines = TrackRecorder(), list[str]()
    config = FakeVllmConfig(api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True)
    with running(config) as candidate, running(config) as gateway:
        outputs = gke_outputs(candidate.url, gatewayEndpoint=gateway.url, inferencePools=["p-blue", "p-green"])
        code = promote(outputs, tmp_path, shifter, lines)
        through_gateway = sum(1 for request in gateway.requests if request.path == "/v1/chat/completions")
    assert code == 0, lines
    assert shifter.splits == [10, 50]
    assert shifter.served == ["green"]
    assert through_gateway >= 4  # a short bench through the gateway at each step


def test_a_step_that_fails_through_the_gateway_rolls_back(tmp_path: Path) -> None:
    """A gateway that stops answering once the candidate takes a share: back to 0%, users stay on blue."""
    shifter, lines = TrackRecorder(), list[str]()
    good = FakeVllmConfig(api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True)
    broken = FakeVllmConfig(api_key=API_KEY, always_status={"/health": 503})
    with running(good) as candidate, running(broken) as gateway:
        outputs = gke_outputs(candidate.url, gatewayEndpoint=gateway.url, inferencePools=["p-blue", "p-green"])
        code = promote(outputs, tmp_path, shifter, lines)
    assert code == 1, lines
    assert shifter.splits == [10, 0]
    assert shifter.served == []
    assert any(line.startswith("rolling back:") and "track blue" in line for line in lines)
