"""The preview runs the policy pack's rules on the offline plan, so `make preview` and `pulumi up` agree.

Guards against a stack that previews with exit 0 and is refused only at `pulumi up --policy-pack policy`
(issue 35: a TPU stack with `provisioning.model: guaranteed`, which docs/tpu.md recommended).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy.rules import GUARDRAILS
from preview.__main__ import main as preview_main
from preview.policy_check import STACK_KEYS, PolicyConfigError, enforcement_levels
from tests.test_credentials import stack_root

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
