"""`verify health` as a typed function: ``run_health(target, HealthOptions)``, no argv, as promote and the MCP
server call it."""

from __future__ import annotations

import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig
from tests.fault_server import serving
from verify import UsageError
from verify.endpoint import AuthKind, Target, TimeoutOptions
from verify.health import CheckName, CheckStatus, HealthOptions, Waiting, run_health
from verify.reach import Reach


def test_a_healthy_server_passes_every_check_through_the_typed_function() -> None:
    """Guards against promote's health gate (which calls this function, not the CLI) judging differently
    from `verify health`: every check runs and passes, the report says which model answered."""
    with serving(FakeVllm()) as server:
        target = Target(base_url=server.url, model=None, auth_kind=AuthKind.NONE, source="url")
        report = run_health(target, HealthOptions(wait_s=0, max_tokens=8))
    assert report.exit_code == 0
    assert [check.name for check in report.checks] == list(CheckName)
    assert report.target.model == "tiny-gemma"
    assert report.target.model_discovered
    chats = [seen.body for seen in server.requests if seen.path == "/v1/chat/completions"]
    assert chats
    assert all(isinstance(body, dict) and body["max_tokens"] == 8 for body in chats)


def test_the_api_key_variable_of_the_options_is_the_one_sent_and_advised() -> None:
    """A gate that read the key from another variable than the user named would 401 a healthy candidate;
    the advice on a refused key must name the variable the options gave."""
    with serving(FakeVllm(FakeVllmConfig(api_key="right"))) as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.API_KEY, source="url")
        good = run_health(
            target, HealthOptions(wait_s=0, api_key_env="GATE_KEY"), reach=Reach(env={"GATE_KEY": "right"})
        )
        bad = run_health(
            target, HealthOptions(wait_s=0, api_key_env="GATE_KEY"), reach=Reach(env={"GATE_KEY": "wrong"})
        )
    assert good.exit_code == 0
    assert bad.exit_code == 2
    refused = next(check for check in bad.checks if check.status is CheckStatus.UNAUTHORISED)
    assert "$GATE_KEY" in (refused.cause or "")


def test_a_missing_key_variable_is_a_usage_error_before_any_request() -> None:
    """No credential: exit 2 with the variable named, not six failed checks."""
    target = Target(base_url="http://127.0.0.1:9", model="m", auth_kind=AuthKind.API_KEY, source="url")
    with pytest.raises(UsageError, match="NO_SUCH_KEY"):
        run_health(target, HealthOptions(api_key_env="NO_SUCH_KEY"), reach=Reach(env={}))


def test_waiting_is_reported_and_bounded_by_the_options() -> None:
    """A server that never becomes ready must end unreachable after wait_s, telling the caller each poll."""
    seen: list[Waiting] = []
    with serving(FakeVllm(FakeVllmConfig(always_status={"/health": 503}))) as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.NONE, source="url")
        report = run_health(
            target, HealthOptions(wait_s=0.05, timeouts=TimeoutOptions(connect_s=1)), on_waiting=seen.append
        )
    assert report.checks[0].status is CheckStatus.UNREACHABLE
    assert seen
    assert all(waiting.wait_s == 0.05 for waiting in seen)
    assert report.exit_code == 2


def test_health_options_are_validated() -> None:
    """A tool passing a negative wait or zero tokens must be told which field is wrong."""
    with pytest.raises(ValueError, match="wait_s"):
        HealthOptions(wait_s=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        HealthOptions(max_tokens=0)
