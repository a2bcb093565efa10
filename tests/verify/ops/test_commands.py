"""`verify status`, `preflight` and `logs` as typed functions (verify/ops/commands.py), no argv: what the CLI
and the MCP server both call."""

from __future__ import annotations

import pytest

from remote.google_auth import ADC_SETUP_COMMAND
from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import ops_stack
from tests.verify.ops.test_status import SERVICES, _list, _now, _service_in
from verify.ops import commands
from verify.ops.commands import LogsOptions, StatusOptions
from verify.ops.logs import LogsReport
from verify.ops.preflight import PreflightReport
from verify.ops.status import Readiness, RolloutState, StatusReport


def _no_credentials() -> GoogleApis:
    raise CannotCheckError("no Application Default Credentials")


def _ready(endpoint: str, auth: str) -> Readiness:
    return Readiness(status="pass", summary="ready")


def test_status_of_a_ready_service_is_the_commands_whole_answer(fake: FakeGoogle) -> None:
    """Guards against a tool's status differing from `verify status`: the typed function looks once, adds the
    newest cold start (best effort: here the fake has no log lines, and says so) and exits 0."""
    fake.route("GET", SERVICES, _list(_service_in("l4", "run_service_ready.json")))
    report = commands.status(
        ops_stack("l4"),
        StatusOptions(),
        open_apis=lambda: GoogleApis(tokens, api_root=fake.url),
        probe=_ready,
        now=_now,
    )
    assert report.state is RolloutState.READY
    assert report.exit_code == 0
    assert report.readiness == Readiness(status="pass", summary="ready")
    assert report.cold_start is not None or report.cold_start_problem is not None


def test_watching_reports_each_new_state(fake: FakeGoogle) -> None:
    """--watch as an option: the caller hears the state it ends on, and a ready rollout ends the watch at once."""
    fake.route("GET", SERVICES, _list(fixture("run_service_candidate.json")))
    heard: list[StatusReport] = []
    report = commands.status(
        ops_stack("l4"),
        StatusOptions(watch=True, interval_s=1, timeout_s=5),
        open_apis=lambda: GoogleApis(tokens, api_root=fake.url),
        probe=_ready,
        on_change=heard.append,
        now=_now,
    )
    assert report.state is RolloutState.READY
    assert [seen.state for seen in heard] == [RolloutState.READY]
    assert not report.timed_out


def test_without_credentials_every_command_says_so_and_exits_2() -> None:
    """Guards against a traceback (or a silent pass) when Google cannot be asked: each report names the
    problem and the command that fixes it."""
    stack = ops_stack("l4")
    found: list[StatusReport | PreflightReport | LogsReport] = [
        commands.status(stack, StatusOptions(), open_apis=_no_credentials),
        commands.preflight(stack, open_apis=_no_credentials),
        commands.logs(stack, LogsOptions(since_s=600), open_apis=_no_credentials),
    ]
    for report in found:
        assert report.exit_code == 2
        assert "no Application Default Credentials" in report.model_dump_json()
        assert ADC_SETUP_COMMAND in report.model_dump_json()


def test_options_are_validated() -> None:
    """A tool passing nonsense must be told which field is wrong, not get a negative watch or limit."""
    with pytest.raises(ValueError, match="interval_s"):
        StatusOptions(interval_s=0)
    with pytest.raises(ValueError, match="limit"):
        LogsOptions(limit=0)
