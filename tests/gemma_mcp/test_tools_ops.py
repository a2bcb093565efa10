"""preflight, status and logs through MCP, against the same local fake of Google's APIs as the CLI's tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from gemma_mcp.context import ServerContext
from preview.stack_file import available_stacks
from remote.google_auth import ADC_SETUP_COMMAND
from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError
from tests.conftest import ROOT
from tests.gemma_mcp.conftest import connect, make_context, text_of
from tests.verify.ops.coldstart_entries import log_entries
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, STACKS, Project
from tests.verify.ops.test_coldstart import PHASES
from tests.verify.ops.test_logs import ENTRIES, LINES, entry
from tests.verify.ops.test_status import REVISIONS, SERVICES

OPS_TOOLS = {"preflight", "status", "logs"}


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def at_fake(fake: FakeGoogle) -> ServerContext:
    return dataclasses.replace(make_context(), google=lambda: GoogleApis(tokens, api_root=fake.url))


def no_credentials() -> GoogleApis:
    raise CannotCheckError(f"no Application Default Credentials; run `{ADC_SETUP_COMMAND}`")


@pytest.mark.parametrize("stack", STACKS)
async def test_preflight_all_clear_for_every_stack(fake: FakeGoogle, stack: str) -> None:
    """An agent asking before `pulumi up` must get the same all-clear verdict as the CLI, for every stack."""
    Project().install(fake)
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool("preflight", {"stack": stack, "project": "proj-1"})
    assert not result.is_error, result.content
    report = result.structured_content
    assert (report["command"], report["stack"], report["exit_code"], report["passed"]) == ("preflight", stack, 0, True)
    assert report["report"]["findings"]
    assert all(finding["verdict"] in {"pass", "info"} for finding in report["report"]["findings"])


async def test_preflight_names_a_missing_permission_with_its_role(fake: FakeGoogle) -> None:
    """A blocker must come back with what is missing and the role that grants it, and exit_code 1."""
    Project(missing_permissions={"run.services.create"}).install(fake)
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool("preflight", {"stack": "l4", "project": "proj-1"})
    assert result.structured_content["exit_code"] == 1
    assert "run.services.create" in text_of(result)
    assert "roles/run.admin" in text_of(result)


async def test_status_of_a_revision_failing_its_probe(fake: FakeGoogle) -> None:
    """A revision that never passed its startup probe must be reported failed, with Cloud Run's reason."""
    fake.route("GET", SERVICES, {"services": [fixture("run_service_failed.json")]})
    fake.route("GET", REVISIONS, fixture("run_revisions_failed.json"))
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool("status", {"stack": "l4", "project": "proj-1"})
    report = result.structured_content
    assert report["exit_code"] == 1
    assert report["report"]["state"] == "failed"
    assert "startup probe" in text_of(result).lower()


async def test_logs_recognise_a_failure_signature(fake: FakeGoogle) -> None:
    """A GCS FUSE permission error in the logs must come back explained, with the uid/gid fix."""
    fake.route("POST", ENTRIES, {"entries": [entry("l4", LINES["gcsfuse-permission-denied"], severity="ERROR")]})
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool(
            "logs", {"stack": "l4", "project": "proj-1", "since": "2h", "errors_only": True}
        )
    report = result.structured_content
    assert report["exit_code"] == 1
    assert [d["signature"] for d in report["report"]["diagnoses"]] == ["gcsfuse-permission-denied"]
    assert "cloudRun.mount.uid/gid" in text_of(result)


@pytest.mark.parametrize("tool", sorted(OPS_TOOLS))
async def test_without_credentials_each_tool_says_how_to_set_them_up(tool: str) -> None:
    """No Application Default Credentials: exit_code 2 and the gcloud command, never a traceback."""
    ctx = dataclasses.replace(make_context(), google=no_credentials)
    async with connect(ctx) as client:
        result = await client.call_tool(tool, {"stack": "tpu-v6e", "project": "proj-1"})
    assert not result.is_error
    assert result.structured_content["exit_code"] == 2
    assert ADC_SETUP_COMMAND in repr(result.structured_content)


async def test_bad_arguments_get_the_clis_messages() -> None:
    """A stack without a project, an unknown stack, a bad --since or an unbounded watch are refused by name."""
    async with connect() as client:
        no_project = await client.call_tool("preflight", {"stack": "l4"})
        unknown = await client.call_tool("status", {"stack": "l5", "project": "proj-1"})
        since = await client.call_tool("logs", {"stack": "l4", "project": "proj-1", "since": "yesterday"})
        watch = await client.call_tool("status", {"stack": "l4", "project": "proj-1", "watch_s": 86400})
    assert "pass --project <your-project-id>" in text_of(no_project)
    assert f"stacks here: {', '.join(available_stacks(ROOT))}" in text_of(unknown)
    assert since.is_error
    assert text_of(since).startswith("Error executing tool logs: since:")
    assert "watch_s: 86400" in text_of(watch)


async def test_ops_tools_only_read(fake: FakeGoogle) -> None:
    """Nothing the ops tools send may change the project: only GETs and the two read-only POSTs."""
    Project().install(fake)
    async with connect(at_fake(fake)) as client:
        for tool in sorted(OPS_TOOLS):
            await client.call_tool(tool, {"stack": "l4", "project": "proj-1"})
    writes = [seen for seen in fake.seen if seen.method != "GET"]
    assert {seen.path.rsplit("/", 1)[-1] for seen in writes} <= {"proj-1:testIamPermissions", "entries:list"}


async def test_status_says_how_many_instances_run_now(fake: FakeGoogle) -> None:
    """The agent asks "how many instances are up": the count is in the tool's text, not only in its JSON."""
    fake.route("GET", SERVICES, {"services": [fixture("run_service_ready.json")]})
    fake.route("GET", rf"/monitoring/v3/projects/{PROJECT}/timeSeries", fixture("monitoring_run_instance_count.json"))
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool("status", {"stack": "l4", "project": PROJECT})
    assert "instances now: 3 active, 1 idle" in text_of(result)
    assert result.structured_content["report"]["instances"]["active"] == 3


async def test_status_gives_the_agent_the_cold_start_the_cli_prints(fake: FakeGoogle) -> None:
    """The MCP status tool ran its own copy of the status command and left out the cold start: an agent asked why
    the first request after scale to zero was slow saw nothing, while `verify status` printed every phase."""
    fake.route("GET", SERVICES, {"services": [fixture("run_service_ready.json")]})
    fake.route("POST", ENTRIES, {"entries": log_entries("vllm-0.32.0-cpu-default-loader.log")})
    async with connect(at_fake(fake)) as client:
        result = await client.call_tool("status", {"stack": "l4", "project": PROJECT})
    text = text_of(result)
    assert "cold start of " in text
    assert "slowest: engine start" in text
    phases = result.structured_content["report"]["cold_start"]["phases"]
    assert [phase["name"] for phase in phases] == PHASES
    assert round(sum(phase["seconds"] for phase in phases), 1) == 70.0
