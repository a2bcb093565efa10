"""`python -m verify preflight|status|logs`: flags, exit codes, `--json`, and the missing-credentials path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remote.google_auth import ADC_SETUP_COMMAND
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import ROOT, STACKS, Project
from tests.verify.ops.test_logs import ENTRIES, LINES, entry
from tests.verify.ops.test_status import REVISIONS, SERVICES
from verify.cli import main
from verify.ops import google as ops_google
from verify.ops.google import API_ROOT_ENV


@pytest.fixture(autouse=True)
def cli_at_fake(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI as a user runs it from the project, pointed at the fake through VERIFY_GOOGLE_API_ROOT."""
    monkeypatch.chdir(ROOT)
    if "fake" in request.fixturenames:
        server: FakeGoogle = request.getfixturevalue("fake")
        monkeypatch.setenv(API_ROOT_ENV, server.url)
        monkeypatch.setattr(ops_google, "adc_tokens", lambda: tokens)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where `gcloud auth application-default login` was never run."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
    monkeypatch.setenv("NO_GCE_CHECK", "True")


def test_preflight_json_all_clear_exits_0(fake: FakeGoogle, capsys: pytest.CaptureFixture[str]) -> None:
    """`preflight --json` prints one JSON document (nothing else on stdout) and exits 0 when all is clear."""
    Project().install(fake)
    code = main(["preflight", "--stack", "tpu-v6e", "--project", "proj-1", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["exit_code"] == 0
    assert document["stack"] == "tpu-v6e"


def test_preflight_table_shows_blockers_and_exits_1(fake: FakeGoogle, capsys: pytest.CaptureFixture[str]) -> None:
    """The table names the blocker and its fix."""
    Project(missing_permissions={"run.services.create"}).install(fake)
    code = main(["preflight", "--stack", "l4", "--project", "proj-1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "run.services.create" in out
    assert "roles/run.admin" in out
    assert "1 blocker(s)" in out


def test_status_of_a_failed_revision_exits_1(fake: FakeGoogle, capsys: pytest.CaptureFixture[str]) -> None:
    """`status` shows the failing revision's reason and exits 1."""
    fake.route("GET", SERVICES, {"services": [fixture("run_service_failed.json")]})
    fake.route("GET", REVISIONS, fixture("run_revisions_failed.json"))
    code = main(["status", "--stack", "l4", "--project", "proj-1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED" in out
    assert "startup probe" in out


def test_logs_explains_a_signature_and_exits_1(fake: FakeGoogle, capsys: pytest.CaptureFixture[str]) -> None:
    """`logs --errors` prints the line and a table of recognised failures with fixes."""
    fake.route("POST", ENTRIES, {"entries": [entry("l4", LINES["gcsfuse-permission-denied"], severity="ERROR")]})
    code = main(["logs", "--stack", "l4", "--project", "proj-1", "--since", "2h", "--errors"])
    out = capsys.readouterr().out
    assert code == 1
    assert "gcsfuse-permission-denied" in out
    assert "cloudRun.mount.uid/gid" in out


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("command", ["preflight", "status", "logs"])
def test_without_credentials_exit_2_with_the_setup_command(
    no_credentials: None, command: str, stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Application Default Credentials: exit 2 and the one command that sets them up, in --json too."""
    code = main([command, "--stack", stack, "--project", "proj-1", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 2
    assert document["exit_code"] == 2
    assert ADC_SETUP_COMMAND in json.dumps(document)


def test_stack_without_project_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stack files name no project: say to pass --project or set gcp:project, exit 2."""
    monkeypatch.chdir(ROOT)
    code = main(["preflight", "--stack", "l4"])
    assert code == 2
    assert "pass --project" in capsys.readouterr().err


def test_unknown_stack_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in --stack lists the stacks there are."""
    monkeypatch.chdir(ROOT)
    code = main(["status", "--stack", "l5", "--project", "proj-1"])
    assert code == 2
    listed = capsys.readouterr().err.split("stacks here: ", 1)[1].split(" (", 1)[0].strip()
    assert set(STACKS) <= set(listed.split(", "))  # and the examples/ stacks


def test_bad_since_is_refused_by_argparse(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """--since 1week: argparse exits 2 naming the forms allowed."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_info:
        main(["logs", "--stack", "l4", "--project", "proj-1", "--since", "1week"])
    assert exit_info.value.code == 2
    assert "30m, 1h, 2d" in capsys.readouterr().err


def test_status_watch_prints_changes_to_stderr_and_the_last_report_as_json(
    fake: FakeGoogle, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status --watch --json`: progress lines on stderr, one JSON document on stdout, exit 1 on failure."""
    answers = [fixture("run_service_rolling.json"), fixture("run_service_failed.json")]
    fake.route(
        "GET", SERVICES, lambda _m, _q, _b: (200, {"services": [answers.pop(0) if len(answers) > 1 else answers[0]]})
    )
    revisions = [{"revisions": []}, fixture("run_revisions_failed.json")]  # not failed yet, then failed
    fake.route("GET", REVISIONS, lambda _m, _q, _b: (200, revisions.pop(0) if len(revisions) > 1 else revisions[0]))
    code = main(["status", "--stack", "l4", "--project", "proj-1", "--watch", "--interval", "0.01", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(captured.out)["state"] == "failed"
    assert "in-progress: rolling out" in captured.err
    assert "failed: revision gemma-l4-vllm-service-3f2a1b7-00003-q9p failed" in captured.err


def test_installed_command_reaches_the_stack_reader(tmp_path: Path) -> None:
    """`gemma-verify preflight` pointed at a folder without the project must fail on the missing project
    file, not on an import (the installed package has to carry preview's stack-file reader and stacks'
    settings), and say how to name the project."""
    script = Path(sys.executable).with_name("gemma-verify")
    if not script.exists():
        pytest.skip("gemma-verify is installed by `make venv` / `make test` (pip install --no-deps -e .)")
    completed = subprocess.run(
        [str(script), "preflight", "--stack", "l4", "--project", "proj-1"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "GEMMA_SERVING_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 2, completed.stderr
    assert f"no Pulumi.yaml in {tmp_path.resolve()} (GEMMA_SERVING_ROOT)" in completed.stderr
