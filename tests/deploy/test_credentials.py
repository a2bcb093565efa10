"""No plan of any stack shows a credential, whichever setting it was pasted into.

Guards against: a Hugging Face token pasted into `tpu.hfTokenSecret` (which names a Secret Manager
secret) being printed in the TPU startup script and an IAM binding's name; `--hf-token hf_...` in
`vllm.extraArgs` passing the settings and the preview; a token in an env value, a mount option, an
exclude pattern or a label; and any validation message quoting the value back into a CI log.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.__main__ import main as preview_main
from preview.capture import run_program
from preview.render import plan_document, text_plan
from stacks.credentials import credential_problems
from tests.conftest import ROOT, stack_config
from tests.stacks.test_settings import config_with, long_form, problems_of

TOKEN = "hf_LeakCanaryTokenForCredentialTests0123456"
STORE_IT = (
    "keep the credential in Secret Manager (docs/deploying.md, 'Secrets') and revoke this one: it is now in "
    "the stack file's history"
)


def stack_root(tmp_path: Path, stack: str, edit: dict[str, Any]) -> Path:
    """A copy of the project whose stack file has `edit` merged into its blocks (dotted paths)."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    for dotted, value in edit.items():
        key, *path = dotted.split(".")
        block = document["config"].setdefault(f"gemma-serving:{key}", {})
        for part in path[:-1]:
            block = block.setdefault(part, {})
        if path:
            block[path[-1]] = value
        else:
            document["config"][f"gemma-serving:{key}"] = value
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def preview_everything(root: Path, stack: str, capsys: pytest.CaptureFixture[str]) -> tuple[set[int], str]:
    """Both plan formats of `stack`, in process: the exit codes and everything printed."""
    printed = []
    codes = set()
    for output_format in ("text", "json"):
        codes.add(preview_main(["--stack", stack, "--root", str(root), "--format", output_format]))
        out, err = capsys.readouterr()
        printed.append(out + err)
    return codes, "\n".join(printed)


# Every setting that names a secret or takes free-form text, with the message each gets (never the value).
REFUSED = [
    pytest.param(
        "tpu-v6e",
        {"tpu.hfTokenSecret": TOKEN},
        "gemma-serving:tpu.hfTokenSecret: holds a Hugging Face token, but this setting names the Secret Manager "
        "secret that stores it (its id, e.g. hf-token, or projects/<project>/secrets/<id>), never the credential "
        f"itself; {STORE_IT}",
        id="tpu.hfTokenSecret",
    ),
    pytest.param(
        "l4",
        {"vllm.extraArgs": ["--hf-token", TOKEN]},
        "gemma-serving:vllm.extraArgs: --hf-token puts a credential on the command line, where the plan, the "
        "Cloud Run revision and the node's process list show it; remove the flag: a gated checkpoint is fetched "
        "by the import job with the stack's hfToken secret (`pulumi config set --secret gemma-serving:hfToken "
        "...`) and the server reads the bucket",
        id="vllm.extraArgs-flag",
    ),
    pytest.param(
        "tpu-v6e",
        {"vllm.extraArgs": [f"--hf-token={TOKEN}"]},
        f"gemma-serving:vllm.extraArgs[0]: holds what looks like a Hugging Face token; {STORE_IT}",
        id="vllm.extraArgs-inline",
    ),
    pytest.param(
        "rtx6000",
        {"cloudRun.env": {"HUB_SETTING": TOKEN}},
        f"gemma-serving:cloudRun.env.HUB_SETTING: holds what looks like a Hugging Face token; {STORE_IT}",
        id="cloudRun.env-value",
    ),
    pytest.param(
        "l4",
        {"cloudRun.mount.extraOptions": ["implicit-dirs", f"token={TOKEN}"]},
        f"gemma-serving:cloudRun.mount.extraOptions[1]: holds what looks like a Hugging Face token; {STORE_IT}",
        id="cloudRun.mount.extraOptions",
    ),
    pytest.param(
        "tpu-v6e",
        {"model.source.exclude": [TOKEN]},
        f"gemma-serving:model.source.exclude[0]: holds what looks like a Hugging Face token; {STORE_IT}",
        id="model.source.exclude",
    ),
    pytest.param(
        "l4",
        {"labels": {"team": TOKEN}},
        f"gemma-serving:labels.team: holds what looks like a Hugging Face token; {STORE_IT}",
        id="labels",
    ),
    pytest.param(
        "tpu-v6e",
        {"hfToken": TOKEN},
        "gemma-serving:hfToken is stored in plain text in the stack file",
        id="hfToken-plain",
    ),
]


@pytest.mark.parametrize(("stack", "edit", "message"), REFUSED)
def test_a_credential_in_any_setting_is_refused_without_being_printed(
    stack: str, edit: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan is refused with the key named, and neither format prints the token anywhere."""
    codes, printed = preview_everything(stack_root(tmp_path, stack, edit), stack, capsys)
    assert codes == {1}
    assert message in printed
    assert TOKEN not in printed


@pytest.mark.parametrize("stack", ["l4", "rtx6000", "tpu-v6e"])
def test_the_token_as_a_pulumi_secret_never_reaches_the_plan(stack: str) -> None:
    """The one place a token belongs (`pulumi config set --secret gemma-serving:hfToken`) on every stack,
    the TPU one included: the plan renders, and neither format nor any log line shows it."""
    config = stack_config(stack)
    values = {**long_form(config.values), "gemma-serving:hfToken": TOKEN}
    model = json.loads(values["gemma-serving:model"])
    model["source"]["huggingFace"]["gated"] = True
    values["gemma-serving:model"] = json.dumps(model)
    capture = run_program(
        ROOT / "__main__.py",
        project=config.project,
        stack=stack,
        config=values,
        secret_keys=[*config.secret_keys, "gemma-serving:hfToken"],
    )
    assert not [message for severity, message in capture.logs if severity == "error"]
    document = json.dumps(plan_document(capture, stack=stack, project=config.project, notes=[]))
    text = text_plan(capture, stack=stack, project=config.project, notes=[])
    assert capture.resources
    assert TOKEN not in document
    assert TOKEN not in text
    assert all(TOKEN not in message for _, message in capture.logs)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("AIza" + "B" * 35, "a Google API key"),
        ("ya29." + "c" * 40, "a Google OAuth access token"),
        ("ghp_" + "d" * 36, "a GitHub token"),
        ("AKIA" + "E" * 16, "an AWS access key id"),
        ("sk-" + "f" * 40, "an API key (sk-...)"),
        ("-----BEGIN PRIVATE KEY-----", "a private key"),
        ("https://user:hunter2@example.com/model", "a password inside a URL"),
    ],
)
def test_other_credential_shapes_are_named(value: str, kind: str) -> None:
    """Not only Hugging Face tokens: Google, GitHub, AWS and other keys are refused the same way."""
    message = problems_of(config_with("l4", cloudRun__env={"SOMETHING": value}))
    assert message == f"gemma-serving:cloudRun.env.SOMETHING: holds what looks like {kind}; {STORE_IT}"
    assert value not in message


@pytest.mark.parametrize("stack", ["l4", "rtx6000", "tpu-v6e"])
def test_shipped_stack_files_hold_no_credential(stack: str) -> None:
    """Commit ids, digests and paths are not mistaken for credentials (no false alarm on the shipped files)."""
    values = stack_config(stack).values
    raw = {key.removeprefix("gemma-serving:"): value for key, value in values.items()}
    assert credential_problems(raw) == []


def test_api_key_flag_is_refused_whatever_its_value() -> None:
    """`--api-key` on the command line shows in the revision: refused even with a short, harmless-looking key."""
    message = problems_of(config_with("l4", vllm__extraArgs=["--api-key", "abc"]))
    assert message == (
        "gemma-serving:vllm.extraArgs: --api-key puts a credential on the command line, where the plan, the Cloud "
        "Run revision and the node's process list show it; remove the flag: Cloud Run services are guarded by IAM "
        "(roles/run.invoker), and the TPU node gets its generated key as VLLM_API_KEY from Secret Manager"
    )
