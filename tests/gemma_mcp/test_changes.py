"""The cloud-changing tools: absent without --allow-changes, refused without confirmation, audited with it."""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Sequence

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from gemma_mcp.import_runs import import_run_urn
from gemma_mcp.runner import Completed
from preview.stack_file import available_stacks
from tests.conftest import ROOT
from tests.gemma_mcp.conftest import FakePulumi, connect, make_context, text_of

CHANGING_TOOLS = {"deploy", "destroy", "run_weight_import", "promote"}
L4_RUN = "urn:pulumi:l4::gemma-serving::gemma:storage:ModelImport$command:local:Command::gemma-l4-import-target-run"


async def test_without_the_flag_no_tool_can_change_the_cloud() -> None:
    """A server started without --allow-changes must not even list a tool that deploys or destroys."""
    pulumi = FakePulumi()
    async with connect(make_context(pulumi=pulumi)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        attempt = await client.call_tool("destroy", {"stack": "l4", "confirm": "l4"})
    assert not names & CHANGING_TOOLS
    assert attempt.is_error
    assert pulumi.calls == []


@pytest.mark.parametrize("confirm", [None, "", "yes", "rtx6000", "L4"])
async def test_a_change_without_the_stacks_name_as_confirmation_is_refused(confirm: str | None) -> None:
    """Even with the flag, a deploy or destroy must not run unless confirm repeats the stack name exactly."""
    pulumi = FakePulumi()
    arguments = {"stack": "l4"} | ({"confirm": confirm} if confirm is not None else {})
    async with connect(make_context(allow_changes=True, pulumi=pulumi)) as client:
        results = [await client.call_tool(tool, arguments) for tool in sorted(CHANGING_TOOLS)]
    for result in results:
        assert result.is_error
        assert "call again with confirm='l4' once the user has agreed" in text_of(result)
    assert pulumi.calls == []


async def test_a_confirmed_deploy_reports_what_changed_without_secret_values() -> None:
    """A confirmed deploy must run `up` once and report Pulumi's change summary; secret outputs stay hidden."""
    pulumi = FakePulumi()
    async with connect(make_context(allow_changes=True, pulumi=pulumi)) as client:
        result = await client.call_tool("deploy", {"stack": "l4", "confirm": "l4"})
    assert not result.is_error, result.content
    assert pulumi.calls == [("up", "l4", ())]
    assert result.structured_content == {
        "stack": "l4",
        "operation": "deploy",
        "result": "succeeded",
        "resource_changes": {"create": 2, "same": 20},
        # The contract's outputs typed; one it does not declare (the fake's apiKey) as exported, masked.
        "outputs": {"endpoint": "https://x.run.app"},
        "other_outputs": {"apiKey": "[secret]"},
        "secret_outputs": ["apiKey"],
    }
    assert "2 create, 20 same" in text_of(result)


async def test_a_confirmed_destroy_of_an_unknown_stack_is_refused_by_name() -> None:
    """A typo in the stack name must stop a destroy with the list of real stacks, before Pulumi is asked."""
    pulumi = FakePulumi()
    async with connect(make_context(allow_changes=True, pulumi=pulumi)) as client:
        result = await client.call_tool("destroy", {"stack": "l5", "confirm": "l5"})
    assert result.is_error
    assert f"stacks here: {', '.join(available_stacks(ROOT))}" in text_of(result)
    assert pulumi.calls == []


async def test_a_weight_import_rerun_replaces_only_that_imports_command() -> None:
    """Re-running an import must replace exactly the command that runs it, and nothing else in the stack."""
    pulumi = FakePulumi(
        urns=["urn:pulumi:l4::gemma-serving::gcp:storage/bucket:Bucket::gemma-l4-models-bucket", L4_RUN]
    )
    async with connect(make_context(allow_changes=True, pulumi=pulumi)) as client:
        result = await client.call_tool("run_weight_import", {"stack": "l4", "role": "target", "confirm": "l4"})
        missing = await client.call_tool("run_weight_import", {"stack": "l4", "role": "drafter", "confirm": "l4"})
    assert not result.is_error, result.content
    assert ("up", "l4", (L4_RUN,)) in pulumi.calls
    assert missing.is_error
    assert "no weight import 'drafter' in its state; imports it has: target" in text_of(missing)


def test_import_run_urn_matches_the_whole_resource_name() -> None:
    """A role that is a prefix of another (target vs target2) must not select the wrong import."""
    other = L4_RUN.replace("import-target-run", "import-target2-run")
    assert import_run_urn([other, L4_RUN], "l4", "target") == L4_RUN
    with pytest.raises(ToolError, match="imports it has: target, target2"):
        import_run_urn([other, L4_RUN], "l4", "drafter")


@dataclasses.dataclass
class RecordingRunner:
    """Stands in for `python -m verify promote`: records the arguments, answers with a fixed exit code."""

    exit_code: int = 0
    verdict: str | None = "promoted"
    routed: dict[str, int] = dataclasses.field(default_factory=lambda: {"gemma-l4-vllm-3f2a9c1b7e": 100})
    calls: list[list[str]] = dataclasses.field(default_factory=list)

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        self.calls.append([module, *args])
        stderr = "" if self.exit_code == 0 else "verify promote: FAILED: p99_ttft_ms 2500 > 2000\n"
        document = {"stack": "l4", "exit_code": self.exit_code, "verdict": self.verdict, "routed": self.routed}
        stdout = "health table\n" + (json.dumps(document) + "\n" if self.verdict else "")
        return Completed(exit_code=self.exit_code, stdout=stdout, stderr=stderr)


async def test_promote_runs_the_gated_rollout_only_when_confirmed() -> None:
    """promote moves user traffic: unconfirmed it must not run; confirmed it must run verify promote as asked."""
    runner = RecordingRunner()
    ctx = dataclasses.replace(make_context(allow_changes=True), run_module=runner)
    async with connect(ctx) as client:
        refused = await client.call_tool("promote", {"stack": "l4"})
        done = await client.call_tool(
            "promote", {"stack": "l4", "confirm": "l4", "steps": [10, 50, 100], "slo": ["p99_ttft_ms=2000"]}
        )
    assert refused.is_error
    assert runner.calls == [
        [
            "verify",
            "promote",
            "--stack",
            "l4",
            "--json",
            "--policy-pack",
            str(ROOT / "policy"),
            "--steps",
            "10,50,100",
            "--slo",
            "p99_ttft_ms=2000",
        ]
    ]
    assert done.structured_content["passed"] is True
    assert text_of(done).startswith("promoted; Cloud Run routes gemma-l4-vllm-3f2a9c1b7e 100%: stack l4")


async def test_a_failed_gate_is_reported_as_not_promoted() -> None:
    """When a gate fails, the agent must read that traffic stayed where it was, and why."""
    runner = RecordingRunner(exit_code=1, verdict="untouched", routed={"gemma-l4-vllm-0a1b2c3d4e": 100})
    ctx = dataclasses.replace(make_context(allow_changes=True), run_module=runner)
    async with connect(ctx) as client:
        result = await client.call_tool("promote", {"stack": "l4", "confirm": "l4"})
        steps = await client.call_tool("promote", {"stack": "l4", "confirm": "l4", "steps": [10, 50]})
    assert result.structured_content["passed"] is False
    assert "not promoted; traffic untouched; Cloud Run routes gemma-l4-vllm-0a1b2c3d4e 100%" in text_of(result)
    assert "p99_ttft_ms 2500 > 2000" in text_of(result)
    assert "steps: [10, 50] must be percentages in 1..100 ending with 100" in text_of(steps)
    assert len(runner.calls) == 1


@pytest.mark.parametrize(
    ("verdict", "routed", "expected"),
    [
        (
            "handed-back",
            {"gemma-l4-vllm-0a1b2c3d4e": 100},
            "a later step failed and the traffic was handed back; Cloud Run routes gemma-l4-vllm-0a1b2c3d4e 100%",
        ),
        (
            "not-handed-back",
            {"gemma-l4-vllm-0a1b2c3d4e": 90, "gemma-l4-vllm-3f2a9c1b7e": 10},
            (
                "the traffic was NOT handed back: the candidate may still serve users; Cloud Run routes "
                "gemma-l4-vllm-0a1b2c3d4e 90%, gemma-l4-vllm-3f2a9c1b7e 10%"
            ),
        ),
        (None, {}, "outcome unknown (exit 1, no verdict printed): traffic may have moved"),
    ],
)
async def test_the_promote_verdict_is_the_promotions_own_not_the_exit_codes(
    verdict: str | None, routed: dict[str, int], expected: str
) -> None:
    """The tool answered "traffic left as it was" for any non-zero exit, including when the step back had
    failed and the candidate still served 10%."""
    runner = RecordingRunner(exit_code=1, verdict=verdict, routed=routed)
    ctx = dataclasses.replace(make_context(allow_changes=True), run_module=runner)
    async with connect(ctx) as client:
        result = await client.call_tool("promote", {"stack": "l4", "confirm": "l4", "steps": [10, 50, 100]})
    assert expected in text_of(result)
    assert "left as it was" not in text_of(result)
    assert result.structured_content["passed"] is False


async def test_promote_without_the_policy_pack_only_when_the_server_says_so() -> None:
    """--no-policy-pack is the only way the server's traffic updates skip the guardrails."""
    runner = RecordingRunner()
    ctx = dataclasses.replace(make_context(allow_changes=True), run_module=runner, policy_pack=False)
    async with connect(ctx) as client:
        await client.call_tool("promote", {"stack": "l4", "confirm": "l4"})
    assert "--policy-pack" not in runner.calls[0]


def test_every_pulumi_up_the_server_runs_carries_the_policy_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's deploy and weight-import `pulumi up` ran without the policy pack, unlike the workflow."""
    from verify.pulumi_gateway import AutomationGateway

    seen: dict[str, object] = {}

    class Stack:
        workspace = types.SimpleNamespace(pulumi_command=None)

        def up(self, **kwargs: object) -> object:
            seen.update(kwargs)
            return types.SimpleNamespace(
                summary=types.SimpleNamespace(result="succeeded", resource_changes={}), outputs={}
            )

    monkeypatch.setattr("verify.pulumi_gateway.open_stack", lambda *_args, **_kwargs: Stack())
    AutomationGateway(ROOT, policy_packs=(str(ROOT / "policy"),), error=ToolError).up("l4")
    assert seen["policy_packs"] == [str(ROOT / "policy")]
