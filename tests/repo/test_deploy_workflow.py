"""The deploy workflow's rollout steps, read from .github/workflows/deploy.yml.

actionlint and zizmor (make lint) check that the workflow is valid and safe; these tests check that it
does what the README promises: a gated Cloud Run stack is promoted by `verify promote` after `pulumi up`,
never checked only after it already serves, and the flags it passes are ones verify accepts.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from verify.cli import build_parser

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "deploy.yml"


def steps() -> list[dict[str, Any]]:
    document = yaml.safe_load(WORKFLOW.read_text())
    found: list[dict[str, Any]] = document["jobs"]["deploy"]["steps"]
    return found


def step_named(prefix: str) -> tuple[int, dict[str, Any]]:
    for index, step in enumerate(steps()):
        if str(step.get("name", "")).startswith(prefix):
            return index, step
    raise AssertionError(f"no step named {prefix!r} in {WORKFLOW}")


def command_argv(run: str, program: str) -> list[str]:
    """The arguments of the one command line in ``run`` that starts with ``program`` (continuations joined)."""
    joined = run.replace("\\\n", " ")
    line = next(line for line in joined.splitlines() if line.strip().startswith(program))
    return shlex.split(line.strip())[len(shlex.split(program)) :]


def test_gated_stacks_are_promoted_after_the_update() -> None:
    """Guards against the workflow sending users to an unverified revision: the gate must follow `pulumi up`."""
    up_index = next(index for index, step in enumerate(steps()) if step.get("id") == "up")
    index, promote = step_named("verify promote")

    assert index > up_index
    assert "steps.up.outputs.rollout == 'gated'" in promote["if"]
    argv = command_argv(promote["run"], ".venv/bin/python -m verify promote")
    assert "--policy-pack" in argv
    assert argv[argv.index("--policy-pack") + 1] == "policy"
    assert argv.count("--slo") == 2


def test_the_workflows_promote_flags_are_ones_verify_accepts() -> None:
    """Guards against a renamed flag making every deploy fail with a usage error after `pulumi up`."""
    _, promote = step_named("verify promote")
    argv = command_argv(promote["run"], ".venv/bin/python -m verify promote")
    values = {"$STACK": "l4", "$MATRIX_STACK": "l4", "$SLO_SUCCESS_RATE": "0.99", "$SLO_P90_TTFT_MS": "10000"}
    concrete = []
    for arg in argv:
        if arg == "${quality[@]}":  # the quality flags, when the args promise parsers (the next tests run them)
            continue
        expanded = arg
        for variable, value in values.items():
            expanded = expanded.replace(variable, value)
        concrete.append(expanded)

    args = build_parser().parse_args(["promote", *concrete])

    assert args.stack == "l4"
    assert args.rollback is False
    assert args.slo == ["success_rate=0.99", "p90_ttft_ms=10000"]


def test_only_direct_stacks_are_checked_after_they_serve() -> None:
    """Guards against a gated stack being verified only after its new revision took the traffic."""
    _, direct = step_named("verify health and bench (Cloud Run")
    assert "steps.up.outputs.rollout == 'direct'" in direct["if"]


def test_every_latency_gate_is_judged_on_enough_requests() -> None:
    """Guards against the deploy gate judging a p99 on 16 requests (the slowest of 16 under a p99 label):
    each step's percentile SLOs can be judged on the requests per cell it sends."""
    from verify.bench.slo import parse_slo, thin_gates

    values = {"$SLO_SUCCESS_RATE": "0.99", "$SLO_P90_TTFT_MS": "10000", "$STACK": "l4", "$MATRIX_STACK": "l4"}
    checked = 0
    for step in steps():
        run = str(step.get("run", ""))
        for program, flag in ((".venv/bin/python -m verify bench", "--requests"),
                              (".venv/bin/python -m verify promote", "--bench-requests")):  # fmt: skip
            if program not in run:
                continue
            argv = command_argv(run, program)
            slos = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--slo"]
            for variable, value in values.items():
                slos = [slo.replace(variable, value) for slo in slos]
            assert flag in argv, f"{step['name']}: {flag} is not given, so the gate's count is implicit"
            requests = int(argv[argv.index(flag) + 1])
            assert thin_gates([parse_slo(slo) for slo in slos], requests, flag=flag) is None, step["name"]
            checked += 1
    assert checked == 3


def test_adapter_versions_are_gated_after_the_revision_and_with_flags_verify_accepts() -> None:
    """Guards against a declared adapter version taking its public name with no gate (nothing else moves the
    route table), or being gated on a candidate revision that is not the one serving."""
    up_index = next(index for index, step in enumerate(steps()) if step.get("id") == "up")
    revision_index, _ = step_named("verify promote")
    index, adapters = step_named("verify adapters promote")
    assert up_index < revision_index < index
    assert "steps.up.outputs.adapterRoutes != ''" in adapters["if"]
    argv = command_argv(adapters["run"], ".venv/bin/python -m verify adapters promote")
    args = build_parser().parse_args(["adapters", "promote", *[arg.replace("$STACK", "l4") for arg in argv]])
    assert (args.action, args.all, args.stack, args.rollback) == ("promote", True, "l4", False)


QUALITY_STEPS = (
    "verify promote (Cloud Run, gated)",
    "verify health and bench (Cloud Run, direct)",
    "verify health and bench (TPU)",
)


def _run_step(step: dict[str, Any], tmp_path: Path, env: dict[str, str]) -> list[list[str]]:
    """The step's script under bash with a stand-in `.venv/bin/python` (and gcloud) that records each argv."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "argv.jsonl"
    recorder = f"#!/bin/sh\nprintf '%s\\0' \"$@\" >> {log}; printf '\\n' >> {log}\n"
    for name in ("python", "gcloud"):
        (bin_dir / name).write_text(recorder)
        (bin_dir / name).chmod(0o755)
    variables = {key: str(value) for key, value in step.get("env", {}).items() if "${{" not in str(value)}
    variables |= {"PATH": f"{bin_dir}:/usr/bin:/bin", "STACK": "l4", "MATRIX_STACK": "l4", **env}
    for key in ("SLO_SUCCESS_RATE", "SLO_P90_TTFT_MS"):
        variables.setdefault(key, "0.99" if key == "SLO_SUCCESS_RATE" else "10000")
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=variables, check=True)
    lines = [line for line in log.read_text().split("\n") if line]
    return [line.split("\0")[:-1] for line in lines]


@pytest.mark.parametrize("name", QUALITY_STEPS)
@pytest.mark.parametrize(
    ("tool", "reasoning"), [("true", "false"), ("false", "true"), ("true", "true"), ("false", "false")]
)
def test_the_quality_gate_runs_where_the_stacks_args_promise_a_parser(
    tmp_path: Path, name: str, tool: str, reasoning: str
) -> None:
    """The deploy workflow promoted a stack whose args promise tool calls and reasoning without the quality gate
    (issue 46), so a parser that mangled every answer passed. Where the server's vllmArgs name a tool-call or
    reasoning parser, the gate runs (with what each promises); without them, not; verify accepts the flags."""
    _, step = step_named(name)
    for variable, flag in (("TOOL_CALL_PARSER", "--tool-call-parser"), ("REASONING_PARSER", "--reasoning-parser")):
        assert step["env"][variable] == f"${{{{ contains(steps.up.outputs.vllmArgs, '{flag}') }}}}"
    calls = _run_step(step, tmp_path, {"TOOL_CALL_PARSER": tool, "REASONING_PARSER": reasoning})
    checks = [argv[2:] for argv in calls if argv[:2] == ["-m", "verify"] and argv[2] in {"promote", "health"}]
    (argv,) = checks
    promised = "true" in (tool, reasoning)
    assert ("--quality" in argv) is promised
    if argv[0] == "health":
        assert ("--expect-tool-calls" in argv) is (tool == "true")
        assert ("--expect-reasoning" in argv) is (reasoning == "true")
    build_parser().parse_args(argv)
