"""The preview runs the policy pack's rules on the offline plan, so `make preview` and `pulumi up` agree.

Guards against a stack that previews with exit 0 and is refused only at `pulumi up --policy-pack policy`
(issue 35: a TPU stack with `provisioning.model: guaranteed`, which docs/tpu.md recommended).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from policy.rules import GUARDRAILS
from preview.__main__ import main as preview_main
from preview.policy_check import STACK_KEYS, PolicyConfigError, enforcement_levels
from tests.deploy.test_credentials import stack_root
from tests.preview_cli import SHARES_SHIPPED_PLANS, shipped_plan

GUARANTEED = {"tpu.provisioning": {"model": "guaranteed"}}


def test_a_guaranteed_tpu_stack_previews_the_violation_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule's name, its level and the stack key at fault, on stderr; exit 1 as `pulumi up` would refuse."""
    root = stack_root(tmp_path, "tpu-v6e", GUARANTEED)
    assert preview_main(["--stack", "tpu-v6e", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "policy: `pulumi up --policy-pack policy` would refuse stack 'tpu-v6e':" in err
    assert "[tpu-queued-resource-bounded, mandatory] stack key tpu.provisioning.model" in err
    assert "neither spot nor bounded" in err


def test_the_json_plan_carries_the_violations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FORMAT=json keeps stdout one document, with the violations in it, and still exits 1."""
    root = stack_root(tmp_path, "tpu-v6e", GUARANTEED)
    assert preview_main(["--stack", "tpu-v6e", "--root", str(root), "--format", "json"]) == 1
    (violation,) = json.loads(capsys.readouterr().out)["policy"]["violations"]
    assert violation["rule"] == "tpu-queued-resource-bounded"
    assert violation["stackKey"].startswith("tpu.provisioning.model")


def test_an_exception_in_the_policy_config_is_honoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same --policy-pack-config file `pulumi up` reads turns the refusal into an advisory line, exit 0."""
    root = stack_root(tmp_path, "tpu-v6e", GUARANTEED)
    exceptions = tmp_path / "exceptions.json"
    exceptions.write_text(json.dumps({"tpu-queued-resource-bounded": {"enforcementLevel": "advisory"}}))
    argv = ["--stack", "tpu-v6e", "--root", str(root), "--policy-pack-config", str(exceptions)]
    assert preview_main(argv) == 0
    assert "[tpu-queued-resource-bounded, advisory]" in capsys.readouterr().err


def test_a_policy_config_naming_no_policy_is_a_usage_error(tmp_path: Path) -> None:
    """A misspelt policy name would silently keep the rule mandatory at `pulumi up`: refused here, exit 2."""
    config = tmp_path / "exceptions.json"
    config.write_text(json.dumps({"tpu-queued-resource-bound": "advisory"}))
    with pytest.raises(PolicyConfigError, match="'tpu-queued-resource-bound' is not a policy of this pack"):
        enforcement_levels(config)
    assert preview_main(["--stack", "l4", "--policy-pack-config", str(config)]) == 2


def test_every_guardrail_names_the_stack_key_behind_it() -> None:
    """A new rule without a key would print 'the program' where the user needs to know what to change."""
    assert {guardrail.name for guardrail in GUARDRAILS} <= set(STACK_KEYS)


def test_a_config_that_disables_every_rule_is_shown_and_the_broken_rule_stays_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`{"all": "disabled"}` let a stack the pack refuses preview with exit 0 and not one word (issue 46): the text
    plan lists the waived rules with the file, and the broken mandatory rule is a WARNING naming both."""
    root = stack_root(tmp_path, "tpu-v6e", GUARANTEED)
    waiver = tmp_path / "waiver.json"
    waiver.write_text(json.dumps({"all": "disabled"}))

    assert preview_main(["--stack", "tpu-v6e", "--root", str(root), "--policy-pack-config", str(waiver)]) == 0

    out, err = capsys.readouterr()
    assert f"Policy config {waiver} (as `pulumi up --policy-pack-config` reads it):" in out
    assert f"disabled here, mandatory in the pack ({len(GUARDRAILS)} of {len(GUARDRAILS)}):" in out
    assert f"WARNING: tpu-queued-resource-bounded is disabled by {waiver}, and this stack breaks it" in out
    assert f"policy: WARNING: `pulumi up --policy-pack policy` refuses stack 'tpu-v6e' unless {waiver}" in err
    assert "[tpu-queued-resource-bounded, disabled] stack key tpu.provisioning.model" in err
    assert f"(disabled by {waiver}; mandatory in the pack)" in err


def test_the_json_plan_names_the_waiving_file_and_each_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A reader of the JSON plan (the MCP plan tool, a PR comment) sees the waiver and the violation it hides."""
    root = stack_root(tmp_path, "tpu-v6e", GUARANTEED)
    waiver = tmp_path / "waiver.json"
    waiver.write_text(json.dumps({"tpu-queued-resource-bounded": "disabled", "images-pinned": "advisory"}))
    argv = ["--stack", "tpu-v6e", "--root", str(root), "--format", "json", "--policy-pack-config", str(waiver)]

    assert preview_main(argv) == 0

    policy = json.loads(capsys.readouterr().out)["policy"]
    assert policy["config"] == {
        "file": str(waiver),
        "waived": [
            {"rule": "images-pinned", "enforcementLevel": "advisory", "packLevel": "mandatory", "setBy": str(waiver)},
            {
                "rule": "tpu-queued-resource-bounded",
                "enforcementLevel": "disabled",
                "packLevel": "mandatory",
                "setBy": str(waiver),
            },
        ],
    }
    (violation,) = policy["violations"]
    assert violation["enforcementLevel"] == "disabled"
    assert violation["waivedBy"] == str(waiver)


@SHARES_SHIPPED_PLANS
def test_without_a_config_file_the_plan_document_is_unchanged() -> None:
    """The shipped plans keep their bytes: `policy` holds only violations and what was not judged offline."""
    document = json.loads(shipped_plan("l4", "json").stdout)
    assert set(document["policy"]) == {"violations", "notJudgedOffline"}


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (lambda path: path.write_text("[" * 200_000 + "]" * 200_000), "nested 200000 levels deep; at most 64 are read"),
        (lambda path: path.write_bytes(b" " * (2 << 20)), "larger than 1 MiB, the most read from such a file"),
        (os.mkfifo, "not a regular file (a FIFO); name a file"),
        (lambda path: path.write_text('{"all": NaN}'), "not valid JSON (NaN is not a JSON number)"),
    ],
    ids=["nested-arrays", "too-large", "fifo", "nan"],
)
def test_a_hostile_policy_config_is_a_usage_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], write: Callable[[Path], object], expected: str
) -> None:
    """200,000 nested arrays raised RecursionError, a FIFO hung the preview: each is exit 2 naming the file."""
    config = tmp_path / "policy.json"
    write(config)
    assert preview_main(["--stack", "l4", "--policy-pack-config", str(config)]) == 2
    assert capsys.readouterr().err == f"error: --policy-pack-config {config}: {expected}\n"


def test_dev_zero_as_the_policy_config_is_refused_before_reading() -> None:
    """`/dev/zero` would be read forever: it is a character device, refused by its type."""
    with pytest.raises(PolicyConfigError, match=r"/dev/zero: not a regular file \(a character device\)"):
        enforcement_levels(Path("/dev/zero"))
