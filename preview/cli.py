"""`python -m preview --stack l4 [--format json]`: the offline plan of one stack.

Exit codes: 0 plan rendered; 1 the stack's settings or program are invalid, or the policy pack would
refuse the plan at `pulumi up` (the messages say why, each policy violation with its rule and stack key);
2 usage errors (no such stack, unreadable files, an unreadable --policy-pack-config).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from preview.capture import run_program
from preview.cold_start_plan import cold_start_document, cold_start_lines, cold_start_notes
from preview.costs import cost_document, cost_section
from preview.image_notes import image_notes
from preview.notes import manual_steps
from preview.policy_check import DISABLED, PolicyConfigError, PolicyReport, enforcement_levels, judge_plan
from preview.render import plan_document, text_plan
from preview.sections import standard_sections
from preview.stack_file import StackFileError, project_root, read_stack_config
from stacks.loading import StackConfigError, given_to_the_program, load_stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__)
    parser.add_argument("--stack", required=True, help="a stack file's name: Pulumi.<stack>.yaml or examples/")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--root", type=Path, default=None, help="folder with Pulumi.yaml (default: $GEMMA_SERVING_ROOT, else this repo)"
    )
    parser.add_argument(
        "--policy-pack-config",
        type=Path,
        default=None,
        help="the JSON file `pulumi up --policy-pack-config` reads: a policy set to advisory or disabled there is "
        "reported, not refused, here too; the plan lists each rule the file changes, and a disabled rule this stack "
        "breaks is a WARNING",
    )
    args = parser.parse_args(argv)
    try:
        root = project_root(args.root)
        config = read_stack_config(root, args.stack)
        levels = enforcement_levels(args.policy_pack_config)
    except (StackFileError, PolicyConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        stack = load_stack(config.values, project=config.project, root=root)
    except StackConfigError as error:
        print(f"Pulumi.{args.stack}.yaml is not valid:", file=sys.stderr)
        for problem in error.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    settings = stack.settings
    try:
        # The program reads the stack loaded above: one capacity assessment per preview.
        with given_to_the_program(config.values, stack):
            capture = run_program(
                root / "__main__.py",
                project=config.project,
                stack=args.stack,
                config=config.values,
                secret_keys=config.secret_keys,
            )
    except (ValueError, TypeError) as error:
        print(f"the program refused stack {args.stack!r}: {error}", file=sys.stderr)
        return 1
    errors = [message for severity, message in capture.logs if severity == "error"]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    capacity = stack.capacity
    policy = judge_plan(capture.resources, levels)
    notes = [*config.notes, *manual_steps(capture), *cold_start_notes(settings), *image_notes(settings)]
    if args.format == "json":
        document = plan_document(capture, stack=args.stack, project=config.project, notes=notes)
        document["cost"] = cost_document(capture)
        document["capacity"] = capacity.as_dict()
        document["coldStart"] = cold_start_document(settings)
        document["policy"] = {
            "violations": [violation.as_dict() for violation in policy.violations],
            "notJudgedOffline": list(policy.unjudged),
        }
        waivers = policy.config_document()
        if waivers is not None:  # only with --policy-pack-config: a plan without one keeps its document
            document["policy"]["config"] = waivers
        # The cost and capacity sections as the text plan prints them, for readers that show text (the MCP plan).
        document["printed"] = {"cost": cost_section(capture), "capacity": capacity.lines()}
        print(json.dumps(document, indent=2, sort_keys=False))
    else:
        text = text_plan(
            capture,
            stack=args.stack,
            project=config.project,
            notes=notes,
            sections=standard_sections(
                cost_section,
                lambda _: capacity.lines(),
                lambda _: cold_start_lines(settings),
                lambda _: policy.config_lines(),
            ),
        )
        print(text, end="")
    return _report_policy(policy, args.stack)


def _report_policy(policy: PolicyReport, stack: str) -> int:
    """Each violation on stderr with its rule, level and stack key; 1 when `pulumi up` would refuse the plan. A
    rule the config file disabled that the stack breaks is a WARNING: the pack refuses it without that file."""
    judged = [violation for violation in policy.violations if violation.level != DISABLED]
    if judged:
        verdict = "would refuse" if policy.refused else "would warn about (advisory)"
        print(f"policy: `pulumi up --policy-pack policy` {verdict} stack {stack!r}:", file=sys.stderr)
        for violation in judged:
            print(f"  - {violation.line()}", file=sys.stderr)
    for violation in policy.disabled_but_broken:
        print(
            f"policy: WARNING: `pulumi up --policy-pack policy` refuses stack {stack!r} unless {violation.waived_by} "
            f"disables the rule, as it does: {violation.line()}",
            file=sys.stderr,
        )
    summary = policy.waiver_summary()
    if summary:
        print(f"policy: {summary}", file=sys.stderr)
    for unjudged in policy.unjudged:
        print(f"policy: not judged offline (known only at `pulumi up`): {unjudged}", file=sys.stderr)
    return 1 if policy.refused else 0
