"""`python -m verify promote`: the state machine against a fake Cloud Run Admin API and local vLLM-shaped
servers standing in for the candidate revision.

Every refusal asserts the one thing a user relies on: the traffic did not move (no change reached the
shifter, and the live split is what it was).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_pulumi import FakeStackOutputs
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from tests.fault_server import serving
from tests.quality_stub import Breakage, QualityStub
from tests.verify.bench.test_cli import running
from tests.verify.promote.fake_cloud_run import (
    ACCESS_TOKEN,
    CANDIDATE,
    PREVIOUS,
    SERVICE,
    SERVING,
    FakeCloudRun,
    FakeShifter,
    running_api,
)
from verify import UsageError
from verify.cli import build_parser
from verify.endpoint import AuthKind, Target, TargetOptions
from verify.health import HealthReport
from verify.promote.cli import run_promote_command
from verify.promote.gates import BenchGate, CommandGates, GateName
from verify.promote.machine import Verdict
from verify.promote.metric_gate import required_metrics
from verify.promote.run import PromoteOptions, Seams, run_promote
from verify.pulumi_gateway import PulumiAutomationShifter
from verify.traffic import TrafficChange

API_KEY = "candidate-test-key"


def stack_outputs(**overrides: Any) -> dict[str, Any]:
    outputs: dict[str, Any] = {
        "endpoint": "https://gemma-l4-vllm-k3xq7wvz5a-uk.a.run.app",
        "servedModelName": "tiny-gemma",
        "authKind": "api-key",
        "platform": "cloud-run",
        "accelerator": "nvidia-l4",
        "rollout": "gated",
        "cloudRunService": SERVICE,
        "candidateRevision": CANDIDATE,
        "servingRevision": SERVING,
        "previousRevision": PREVIOUS,
        "candidatePercent": 0,
    }
    outputs.update(overrides)
    return outputs


class World:
    """One promotion's surroundings: the fake API, the candidate server, the shifter, what was said."""

    def __init__(self, api: FakeCloudRun, candidate: FakeVllm, tmp_path: Path) -> None:
        self.api = api
        self.candidate = candidate
        self.tmp_path = tmp_path
        self.lines: list[str] = []
        api.candidate_uri(candidate.url)
        self.shifter = FakeShifter(api, candidate=CANDIDATE, candidate_uri=candidate.url)

    def promote(
        self,
        *flags: str,
        outputs: dict[str, Any] | None = None,
        cold_start: Callable[[str], str | None] | None = None,
    ) -> int:
        args = build_parser().parse_args(
            [
                "promote",
                "--stack",
                "l4",
                "--cloud-run-api",
                self.api.url,
                "--bench-concurrency",
                "1,2",
                "--bench-context",
                "16",
                "--bench-max-tokens",
                "3",
                "--bench-requests",
                "3",
                "--bench-output-dir",
                str(self.tmp_path / "bench"),
                "--wait",
                "5",
                *flags,
            ]
        )
        seams = Seams(
            pulumi=FakeStackOutputs({"l4": outputs or stack_outputs()}),
            tokens=lambda: (ACCESS_TOKEN, None),
            shifter=self.shifter,
            say=self.lines.append,
            cold_start=cold_start,
        )
        return run_promote_command(args, seams)

    def routed(self) -> dict[str, int]:
        return {
            status["revision"]: status.get("percent", 0)
            for status in self.api.service["trafficStatuses"]
            if status.get("percent", 0)
        }

    def candidate_requests(self, path: str) -> int:
        return sum(1 for request in self.candidate.requests if request.path == path)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)
    config = FakeVllmConfig(api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True)
    with running(config) as candidate, running_api(FakeCloudRun()) as api:
        yield World(api, candidate, tmp_path)


def test_a_candidate_missing_a_watched_metric_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards against promoting a vLLM release that renamed a metric: it passes health and latency gates, then
    leaves the stack's KV-cache panel empty and its alerts silent. The traffic stays where it was."""
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)
    config = FakeVllmConfig(
        api_key=API_KEY,
        count_prompt_words=True,
        chat_template_tokens=3,
        recorded_metrics=True,
        drop_metrics=frozenset({"vllm:kv_cache_usage_perc"}),
    )
    with running(config) as candidate, running_api(FakeCloudRun()) as api:
        world = World(api, candidate, tmp_path)
        code = world.promote()
        assert code == 1
        assert any("lacks vllm:kv_cache_usage_perc" in line for line in world.lines), world.lines
        assert any("failed the metric gate" in line for line in world.lines)
        assert world.shifter.changes == []
        assert world.routed() == {SERVING: 100}
        assert world.candidate_requests("/metrics") >= 1
        # verify health sent its two (chat, chat-stream); the bench gate, refused, sent none.
        assert world.candidate_requests("/v1/chat/completions") == 2


def test_the_metric_gate_asks_for_the_spec_decode_metrics_only_with_speculative_decoding() -> None:
    """The RTX stack's MTP acceptance panel reads vllm:spec_decode_*; the L4 stack (no MTP) must not need them."""
    with_mtp = required_metrics("rtx6000", ["/m", "--speculative-config", '{"method":"mtp"}'])
    without = required_metrics("l4", ["/m"])
    assert "vllm:spec_decode_num_draft_tokens_total" in with_mtp - without
    assert {"vllm:kv_cache_usage_perc", "http_requests_total", "vllm:time_to_first_token_seconds_bucket"} <= without


def test_a_good_candidate_is_gated_then_takes_all_traffic(world: World) -> None:
    """Guards against a promotion that moves traffic without the candidate having proved itself, or that
    leaves the stack's state unable to say what serves and what to roll back to."""
    assert world.routed() == {SERVING: 100}

    code = world.promote("--slo", "success_rate=0.99")

    assert code == 0, world.lines
    assert world.candidate_requests("/health") >= 1  # verify health ran against the tagged URL
    assert world.candidate_requests("/v1/chat/completions") >= 6  # and the bench gate after it
    assert world.shifter.changes == [TrafficChange(CANDIDATE, 0, SERVING, reason=f"promote {CANDIDATE}")]
    assert world.routed() == {CANDIDATE: 100}
    assert all(authorization == f"Bearer {ACCESS_TOKEN}" for _path, authorization in world.api.requests)
    assert any("--rollback" in line for line in world.lines)


def test_steps_move_traffic_in_stages_with_a_health_check_between(world: World) -> None:
    """Guards against a canary rollout that jumps to 100% or never re-checks the candidate under real traffic."""
    health_before_steps: list[int] = []
    world.shifter.after_apply = lambda _change: health_before_steps.append(world.candidate_requests("/health"))

    code = world.promote("--steps", "10,50,100")

    assert code == 0, world.lines
    assert [(c.serving_revision, c.candidate_percent) for c in world.shifter.changes] == [
        (SERVING, 10),
        (SERVING, 50),
        (CANDIDATE, 0),
    ]
    # One health check of the candidate after each partial step.
    assert world.candidate_requests("/health") == health_before_steps[-1]
    assert health_before_steps[1] > health_before_steps[0]
    assert world.routed() == {CANDIDATE: 100}


def test_a_candidate_that_fails_health_never_takes_traffic(world: World) -> None:
    """Guards against a broken revision (here: serving the wrong model name) reaching users."""
    world.candidate.config.served_name = "some-other-model"

    code = world.promote()

    assert code == 1
    assert world.shifter.changes == []
    assert world.routed() == {SERVING: 100}
    assert world.candidate_requests("/v1/chat/completions") == 0  # no bench after a failed health gate
    assert any("failed verify health" in line for line in world.lines)
    assert any(f"traffic untouched: {SERVING}" in line for line in world.lines)


def test_a_candidate_that_breaks_an_slo_never_takes_traffic(world: World) -> None:
    """Guards against a revision that answers but too slowly for the stack's SLO getting promoted anyway."""
    world.candidate.config.ttft_s = 0.02  # every TTFT is at least this: twice the SLO

    code = world.promote("--slo", "mean_ttft_ms=10")

    assert code == 1
    assert world.candidate_requests("/v1/chat/completions") >= 6  # the bench ran
    assert world.shifter.changes == []
    assert world.routed() == {SERVING: 100}
    assert any("failed verify bench" in line for line in world.lines)


def test_a_candidate_that_fails_mid_rollout_hands_its_share_back(world: World) -> None:
    """Guards against a canary that breaks at 10% keeping its share of the users."""

    def break_candidate(change: TrafficChange) -> None:
        if change.candidate_percent == 10:
            world.candidate.config.served_name = "broken"

    world.shifter.after_apply = break_candidate

    code = world.promote("--steps", "10,100")

    assert code == 1
    assert [(c.serving_revision, c.candidate_percent) for c in world.shifter.changes] == [(SERVING, 10), (SERVING, 0)]
    assert world.routed() == {SERVING: 100}


def test_a_candidate_that_never_became_ready_is_refused_before_any_request(world: World) -> None:
    """Guards against promotion probing (or promoting) a revision whose startup probe failed."""
    service = world.api.service
    service["latestReadyRevision"] = f"{SERVICE}/revisions/{SERVING}"
    service["terminalCondition"] = {
        "type": "Ready",
        "state": "CONDITION_FAILED",
        "message": "The user-provided container failed the configured startup probe checks.",
    }

    code = world.promote()

    assert code == 1
    assert world.candidate.requests == []
    assert world.shifter.changes == []
    assert any("never became ready" in line and "startup probe" in line for line in world.lines)


def test_live_traffic_that_differs_from_the_stack_state_is_not_touched(world: World) -> None:
    """Guards against promotion building on a split someone changed by hand (the state would then lie)."""
    world.api.route({SERVING: 50, PREVIOUS: 50}, candidate=CANDIDATE, candidate_uri=world.candidate.url)

    code = world.promote()

    assert code == 1
    assert world.shifter.changes == []
    assert world.candidate.requests == []
    assert any("differs from the stack's state" in line for line in world.lines)


def test_a_failed_update_leaves_the_verdict_to_pulumis_state(world: World) -> None:
    """Guards against reporting a promotion as done when the `pulumi up` that moves traffic failed."""
    world.shifter.fail = True

    code = world.promote()

    assert code == 1
    assert len(world.shifter.changes) == 1
    assert world.routed() == {SERVING: 100}
    assert any("pulumi up" in line for line in world.lines)


def test_the_first_rollout_is_verified_without_moving_traffic(world: World) -> None:
    """Guards against a first deployment (no earlier revision) failing promotion or reshuffling traffic."""
    world.api.route({CANDIDATE: 100}, candidate=CANDIDATE, candidate_uri=world.candidate.url)

    code = world.promote(outputs=stack_outputs(servingRevision=CANDIDATE, previousRevision=None))

    assert code == 0, world.lines
    assert world.candidate_requests("/health") >= 1
    assert world.shifter.changes == []
    assert world.routed() == {CANDIDATE: 100}


def test_rollback_returns_traffic_to_the_previous_revision(world: World) -> None:
    """Guards against a bad promotion with no quick way back to the revision that served before."""
    world.api.route({CANDIDATE: 100}, candidate=CANDIDATE, candidate_uri=world.candidate.url)
    promoted = stack_outputs(servingRevision=CANDIDATE, previousRevision=SERVING)

    code = world.promote("--rollback", outputs=promoted)

    assert code == 0, world.lines
    assert world.shifter.changes == [TrafficChange(SERVING, 0, CANDIDATE, reason=f"rollback to {SERVING}")]
    assert world.routed() == {SERVING: 100}
    assert world.candidate.requests == []  # no gates on the way back


def test_rollback_without_a_previous_revision_moves_nothing(world: World) -> None:
    """Guards against a rollback that guesses a target when the stack never recorded one."""
    code = world.promote("--rollback", outputs=stack_outputs(servingRevision=CANDIDATE, previousRevision=None))

    assert code == 1
    assert world.shifter.changes == []


def test_a_direct_stack_is_a_usage_error(world: World) -> None:
    """Guards against `promote` pretending to gate a stack whose `pulumi up` already moved all traffic."""
    with pytest.raises(UsageError, match="rolls out directly"):
        world.promote(outputs=stack_outputs(rollout="direct"))
    assert world.shifter.changes == []


def test_the_admin_api_refusing_the_caller_is_a_usage_error_naming_the_role(world: World) -> None:
    """Guards against a permissions problem being reported as a failed candidate (or moving traffic blind)."""
    world.api.status = 403

    with pytest.raises(UsageError, match=r"roles/run\.viewer"):
        world.promote()
    assert world.shifter.changes == []
    assert world.candidate.requests == []


def test_steps_must_rise_to_100() -> None:
    """Guards against a step list that would leave the candidate half-promoted or shrink its share."""
    for bad in ("10,50", "50,10,100", "0,100", "10,abc,100"):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args(["promote", "--stack", "l4", "--steps", bad])
        assert exit_info.value.code == 2


def test_google_auth_gates_use_the_service_url_as_the_token_audience() -> None:
    """Guards against a 401 from the tagged URL: Cloud Run checks the token against the service's URL."""
    target = Target(
        base_url="https://gemma-l4-vllm-k3xq7wvz5a-uk.a.run.app",
        model="gemma-4-12b-it",
        auth_kind=AuthKind.GOOGLE,
        source="stack l4",
    )
    gates = CommandGates(stack_target=target, bench_gate=BenchGate())

    candidate = gates.candidate("https://candidate---gemma-l4-vllm-k3xq7wvz5a-uk.a.run.app")

    assert candidate.base_url == "https://candidate---gemma-l4-vllm-k3xq7wvz5a-uk.a.run.app"
    assert candidate.audience == "https://gemma-l4-vllm-k3xq7wvz5a-uk.a.run.app"


def test_the_deploy_workflows_invocation_reaches_the_candidate_with_its_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against the CI job's promote (Cloud Run stack, ID token passed as a bearer variable) failing
    to authenticate to the candidate and so never promoting anything."""
    monkeypatch.setenv("CLOUD_RUN_ID_TOKEN", API_KEY)
    outputs = stack_outputs(authKind="google-id-token")

    code = world.promote("--auth", "api-key", "--api-key-env", "CLOUD_RUN_ID_TOKEN", outputs=outputs)

    assert code == 0, world.lines
    chats = [request for request in world.candidate.requests if request.path == "/v1/chat/completions"]
    assert chats
    assert all(request.headers.get("Authorization") == f"Bearer {API_KEY}" for request in chats)


def test_without_the_pulumi_cli_traffic_cannot_move_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against a promotion that passed its gates reporting success when no `pulumi up` could run."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` on it
    shifter = PulumiAutomationShifter("l4", work_dir=tmp_path)

    with pytest.raises(UsageError, match="needs the CLI logged in to the stack's backend"):
        shifter.apply(TrafficChange(CANDIDATE, 0, SERVING, reason="promote"))


def test_the_tpu_stack_is_refused_with_where_to_look(world: World) -> None:
    """Guards against `promote` pretending a TPU node was gated: its rollouts replace the node (README)."""
    tpu = {"endpoint": "http://10.0.0.7:8000", "servedModelName": "gemma-4-12b-it", "authKind": "api-key"}

    with pytest.raises(UsageError, match=r"runs on 'tpu'.*verify health"):
        world.promote(outputs={**tpu, "platform": "tpu"})
    assert world.api.requests == []


def test_a_stack_deployed_before_gated_rollouts_says_to_update_it_first(world: World) -> None:
    """Guards against a KeyError (or a guess) when the stack's outputs predate the rollout outputs."""
    old = {key: value for key, value in stack_outputs().items() if key not in {"rollout", "candidateRevision"}}

    with pytest.raises(UsageError, match=r"rollout: Field required.*run `pulumi up` with this version first"):
        world.promote(outputs=old)
    assert world.shifter.changes == []


def test_a_candidate_that_refuses_the_credential_fails_the_promotion(world: World) -> None:
    """Guards against a gate that cannot even talk to the candidate (exit 2) letting the rollout through, or
    ending the job as a usage error instead of a failed promotion."""
    world.candidate.config.front_door_status = 403

    code = world.promote()

    assert code == 1
    assert world.shifter.changes == []
    assert world.routed() == {SERVING: 100}
    assert any(
        "exit 2: unreachable, not ready within --wait, or the credential was refused" in line for line in world.lines
    )


@pytest.mark.parametrize(
    "flags",
    [["--slo", "p99_ttft=10"], ["--bench-concurrency", "0"], ["--bench-context", "1,x"]],
)
def test_bad_gate_flags_fail_before_any_gate_runs(flags: list[str]) -> None:
    """Guards against a typo in an SLO or a bench flag surfacing only after the health gate already ran."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["promote", "--stack", "l4", *flags])
    assert exit_info.value.code == 2


def test_an_interrupted_stepped_promotion_resumes_above_the_candidates_share(world: World) -> None:
    """Guards against a re-run after an interrupted canary first shrinking the candidate's share again."""
    world.api.route({SERVING: 50, CANDIDATE: 50}, candidate=CANDIDATE, candidate_uri=world.candidate.url)

    code = world.promote("--steps", "10,50,100", outputs=stack_outputs(candidatePercent=50))

    assert code == 0, world.lines
    assert [(c.serving_revision, c.candidate_percent) for c in world.shifter.changes] == [(CANDIDATE, 0)]
    assert world.routed() == {CANDIDATE: 100}


def test_promote_without_the_pulumi_cli_does_not_suggest_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advice must work for the command that prints it: promote used to say "pass --url instead" when
    the Pulumi CLI was missing, and then refuse --url ("cannot be promoted"), a loop with no way out."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` on it: the real gateway finds no CLI

    args = build_parser().parse_args(["promote", "--stack", "l4"])
    with pytest.raises(UsageError) as refused:
        run_promote_command(args, Seams())
    assert "--url" not in str(refused.value).replace("it has no --url form", "")
    assert "install it (https://www.pulumi.com/docs/install/)" in str(refused.value)


def test_a_later_step_whose_update_fails_hands_the_share_back(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """10% then a failing 50% step: the candidate kept its 10%, against the module's own promise. The share is
    handed back, checked against what Cloud Run routes, and the JSON verdict says so."""
    world.shifter.fail_when = lambda change: change.candidate_percent == 50

    code = world.promote("--steps", "10,50,100", "--json")

    assert code == 1
    assert [(c.serving_revision, c.candidate_percent) for c in world.shifter.changes] == [
        (SERVING, 10),
        (SERVING, 50),
        (SERVING, 0),
    ]
    assert world.routed() == {SERVING: 100}
    outcome = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert outcome["verdict"] == "handed-back"
    assert outcome["routed"] == {SERVING: 100}
    assert any(f"traffic handed back: {SERVING} serves 100%" in line for line in world.lines)


def test_a_failed_hand_back_says_exactly_what_serves(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """When the step back fails too, the candidate still serves 10%: the verdict must say so, with the split,
    never "traffic left as it was"."""
    world.shifter.fail_when = lambda change: change.candidate_percent in {0, 50}

    code = world.promote("--steps", "10,50,100", "--json")

    assert code == 1
    assert world.routed() == {SERVING: 90, CANDIDATE: 10}
    outcome = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert outcome["verdict"] == "not-handed-back"
    assert outcome["routed"] == {SERVING: 90, CANDIDATE: 10}
    assert any(f"Cloud Run routes {SERVING} 90%, {CANDIDATE} 10% now" in line for line in world.lines), world.lines
    assert any("--rollback" in line for line in world.lines)


def test_a_refused_candidate_reports_untouched_traffic_as_json(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON verdict of a gate failure is "untouched", with the split as read before anything moved."""
    world.candidate.config.served_name = "some-other-model"

    assert world.promote("--json") == 1

    outcome = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert outcome["verdict"] == "untouched"
    assert outcome["routed"] == {SERVING: 100}


def test_the_typed_promotion_names_the_failing_check_and_keeps_its_report(world: World) -> None:
    """Guards against a refused promotion that only says "exit 1": called as a function (as the MCP server
    can), the verdict names the gate and the check that failed, and the health report is kept."""
    world.candidate.config.served_name = "some-other-model"
    options = PromoteOptions(
        cloud_run_api=world.api.url,
        wait_s=5,
        bench_gate=BenchGate(concurrency=(1,), context=(16,), max_tokens=3, requests=3, output_dir=world.tmp_path),
    )
    seams = Seams(
        pulumi=FakeStackOutputs({"l4": stack_outputs()}),
        tokens=lambda: (ACCESS_TOKEN, None),
        shifter=world.shifter,
        say=world.lines.append,
        cold_start=lambda _revision: None,
    )

    result = run_promote(TargetOptions(stack="l4"), options, seams)

    assert result.exit_code == 1
    assert result.report.verdict is Verdict.UNTOUCHED
    assert result.report.detail.startswith(f"the candidate {CANDIDATE} failed verify health (exit 1")
    assert "the models check: fail" in result.report.detail
    assert [gate.gate for gate in result.gates] == [GateName.HEALTH]
    health = result.gates[0].report
    assert isinstance(health, HealthReport)
    assert health.exit_code == 1
    assert world.shifter.changes == []
    assert world.routed() == {SERVING: 100}


@pytest.mark.parametrize(
    ("breakage", "answer", "refusal"),
    [
        (Breakage(tool_call_as_text=True), " Hello", "the quality check tool-call"),
        (None, " Something else", "the quality check agreement"),
        (None, " Hello", None),
    ],
)
def test_a_candidate_that_fails_the_quality_gate_never_takes_traffic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breakage: Breakage | None, answer: str, refusal: str | None
) -> None:
    """Guards against a fast but wrong candidate getting promoted: `--quality` with the stack's tool parser
    refuses one whose tool parser is off, and one that answers fixed prompts otherwise than the revision
    serving now (at temperature 0), each naming what it saw; a candidate right on both is promoted."""
    monkeypatch.setenv("VLLM_API_KEY", API_KEY)

    def config(piece: str) -> FakeVllmConfig:
        return FakeVllmConfig(
            api_key=API_KEY, count_prompt_words=True, chat_template_tokens=3, recorded_metrics=True, pieces=(piece,)
        )

    with (
        serving(QualityStub(None, config(" Hello"))) as current,
        serving(QualityStub(breakage, config(answer))) as candidate,
        running_api(FakeCloudRun()) as api,
    ):
        outputs = stack_outputs(endpoint=current.url)
        outputs["vllmArgs"] = [*outputs.get("vllmArgs", []), "--enable-auto-tool-choice", "--tool-call-parser", "x"]
        world = World(api, candidate, tmp_path)
        code = world.promote("--quality", outputs=outputs)
        if refusal is None:
            assert code == 0, world.lines
            assert world.routed() == {CANDIDATE: 100}
        else:
            assert code == 1
            assert world.shifter.changes == []
            assert world.routed() == {SERVING: 100}
            assert any(refusal in line for line in world.lines), world.lines
