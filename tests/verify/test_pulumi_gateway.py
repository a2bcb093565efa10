"""The gateway's own transport, against a `pulumi` on PATH that records what it was asked.

Every reader is tested against a fake gateway (tests/fake_pulumi.py); this file is where the real one is
held to what a user needs of it: a read that changes nothing (no `pulumi stack select`, which would aim the
user's next `pulumi up` at another stack), no secret's plaintext asked for, the CLI's own words when it
fails, and advice that fits the command when there is no CLI at all.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from serving.outputs import BenchJobOutputs
from verify import UsageError
from verify.pulumi_gateway import AutomationGateway, missing_cli_message

PLAINTEXT = "the-api-key-plaintext"
OUTPUTS = {
    "endpoint": "http://10.0.0.5:8000",
    "servedModelName": "gemma-4-12b",
    "authKind": "api-key",
    "platform": "tpu",
    "maxNumSeqs": 16,
    "apiKey": "[secret]",
    "benchJob": {"name": "gemma-l4-bench", "region": "us-east4", "resultsBucket": "b", "resultsPrefix": "runs"},
}
# What a real CLI prints for each command this fake knows; anything else is "unknown command" (exit 2).
FAKE_PULUMI = """
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PULUMI_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "cwd": os.getcwd()}) + "\\n")
args = [arg for arg in args if arg != "--non-interactive"]
stack = args[args.index("--stack") + 1] if "--stack" in args else None
outputs = json.loads(os.environ["FAKE_PULUMI_OUTPUTS"])
if args == ["version"]:
    print("v3.150.0")
elif stack == "missing":
    print(f"error: no stack named '{stack}' found", file=sys.stderr)
    sys.exit(255)
elif stack == "noisy":
    print("warning: a newer version of Pulumi is available")
elif args[:2] == ["stack", "output"]:
    print(json.dumps({**outputs, "apiKey": os.environ["FAKE_PLAINTEXT"]} if "--show-secrets" in args else outputs))
elif args[:2] == ["stack", "export"]:
    secret = os.environ["FAKE_PLAINTEXT"] if "--show-secrets" in args else {"ciphertext": "v1:abc"}
    print(json.dumps({"version": 3, "deployment": {"resources": [
        {"urn": "urn:pulumi:l4::gemma-serving::pulumi:pulumi:Stack::gemma-serving-l4"},
        {"urn": "urn:pulumi:l4::gemma-serving::gcp:secretmanager/secretVersion:SecretVersion::key",
         "outputs": {"secretData": secret}},
    ]}}))
elif args[:1] == ["up"]:
    print("Updating (l4)")
elif args[:2] == ["stack", "history"]:
    print(json.dumps([{"kind": "update", "startTime": "2026-01-01T00:00:00.000Z", "message": "", "environment": {},
                       "config": {}, "result": "succeeded", "resourceChanges": {"same": 20, "update": 1}}]))
else:
    print(f"unknown command {args}", file=sys.stderr)
    sys.exit(2)
"""


class Cli:
    """The fake CLI's log: each call's arguments (without --non-interactive) and working folder."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def calls(self) -> list[list[str]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [[arg for arg in json.loads(line)["args"] if arg != "--non-interactive"] for line in lines]

    def folders(self) -> set[str]:
        """Where the stack's commands ran (`pulumi version`, the CLI check, runs wherever verify was started)."""
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return {call["cwd"] for call in calls if call["args"] != ["version"]}


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(f"#!{shlex.quote(sys.executable)}\n{FAKE_PULUMI}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("FAKE_PULUMI_OUTPUTS", json.dumps(OUTPUTS))
    monkeypatch.setenv("FAKE_PLAINTEXT", PLAINTEXT)
    return Cli(tmp_path / "calls.jsonl")


def _never_selected_nor_decrypted(cli: Cli) -> None:
    for call in cli.calls():
        assert call[:2] != ["stack", "select"], call
        assert "--show-secrets" not in call, call


def test_a_read_selects_nothing_and_never_sees_a_secret(cli: Cli, tmp_path: Path) -> None:
    """Guards against a read-only command re-aiming the user's next `pulumi up` (`pulumi stack select`) or
    pulling a secret output's plaintext into the process (`--show-secrets`, which the Automation API's own
    `Stack.outputs()` runs)."""
    reading = AutomationGateway(tmp_path).outputs("l4")

    assert ["stack", "output", "--json", "--stack", "l4"] in cli.calls()
    _never_selected_nor_decrypted(cli)
    assert cli.folders() == {str(tmp_path)}
    assert reading.secret_names == ("apiKey",)
    assert reading.values["apiKey"] == "[secret]"
    assert PLAINTEXT not in json.dumps(dict(reading.values))
    assert reading.outputs.endpoint == "http://10.0.0.5:8000"
    assert reading.outputs.max_num_seqs == 16
    assert reading.bench_job() == BenchJobOutputs(
        name="gemma-l4-bench", region="us-east4", results_bucket="b", results_prefix="runs"
    )


def test_an_update_selects_nothing_and_reports_masked_outputs(cli: Cli, tmp_path: Path) -> None:
    """Guards against the MCP server's `deploy` of one stack leaving the user's CLI on it, or returning
    the plaintext the Automation API's `Stack.up()` would read back."""
    summary = AutomationGateway(tmp_path, policy_packs=("policy",)).up("l4")

    (up,) = [call for call in cli.calls() if call[:1] == ["up"]]
    assert up[up.index("--policy-pack") + 1] == "policy"
    assert up[up.index("--stack") + 1] == "l4"
    _never_selected_nor_decrypted(cli)
    assert summary.result == "succeeded"
    assert summary.resource_changes == {"same": 20, "update": 1}
    assert summary.outputs.secret_names == ("apiKey",)
    assert PLAINTEXT not in json.dumps(dict(summary.outputs.values))


def test_urns_come_from_a_state_export_that_keeps_secrets_encrypted(cli: Cli, tmp_path: Path) -> None:
    """Guards against listing a stack's resources by decrypting every secret in its state."""
    urns = AutomationGateway(tmp_path).resource_urns("l4")

    assert urns[0].endswith("::gemma-serving-l4")
    assert len(urns) == 2
    _never_selected_nor_decrypted(cli)


def test_a_failing_cli_is_a_usage_error_in_its_own_words(cli: Cli, tmp_path: Path) -> None:
    """`pulumi` failing (no such stack, not logged in) must surface its own message, and where to look."""
    with pytest.raises(UsageError, match=r"exit code 255: error: no stack named 'missing' found \(is 'missing' a"):
        AutomationGateway(tmp_path).outputs("missing")


def test_a_cli_that_prints_no_json_says_what_it_printed(cli: Cli, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="did not print JSON: warning: a newer version"):
        AutomationGateway(tmp_path).outputs("noisy")


def test_the_failure_type_is_the_callers(cli: Cli, tmp_path: Path) -> None:
    """The MCP server passes its tool error, so an agent reads Pulumi's words, not a traceback."""

    class ToolFailureError(Exception):
        pass

    with pytest.raises(ToolFailureError, match="no stack named"):
        AutomationGateway(tmp_path, error=ToolFailureError).outputs("missing")


def test_without_the_cli_each_command_gives_its_own_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards against a traceback, and against advice the command cannot take (promote has no --url)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match=r"`pulumi` is not on PATH; install it \(https://www\.pulumi\.com/.*--url"):
        AutomationGateway(tmp_path).outputs("l4")
    advice = missing_cli_message("this tool needs")
    with pytest.raises(UsageError) as refused:
        AutomationGateway(tmp_path, missing_cli=advice).up("l4")
    assert str(refused.value) == advice
    assert "--url" not in advice


def test_one_gateway_finds_the_cli_once(cli: Cli, tmp_path: Path) -> None:
    """Guards against the MCP server running `pulumi version` once per stack each time it lists endpoints."""
    gateway = AutomationGateway(tmp_path)
    gateway.outputs("l4")
    gateway.outputs("rtx6000")
    assert [call for call in cli.calls() if call == ["version"]] == [["version"]]
    assert [call[-1] for call in cli.calls() if call[:2] == ["stack", "output"]] == ["l4", "rtx6000"]
