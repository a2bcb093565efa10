"""Stack files that mean something other than what they say are refused with the real cause.

Guards against: a key written twice silently taking the last value (the Pulumi CLI refuses such a file);
`gcp:projet` ignored while the plan falls back to a placeholder project; a misspelt `config:` block
reported as a dozen "required but not set" lines; a misspelt setting reported twice; a short commit id
answered with a message about branches; a maxModelLen suggestion above the model's own maximum.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from preview.__main__ import main as preview_main
from stacks.loading import settings_from_config
from tests.conftest import ROOT
from tests.stacks.test_settings import config_with, problems_of

P = "gemma-serving:"


def root_with(tmp_path: Path, stack: str, text: str) -> Path:
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(text)
    return tmp_path


def shipped(stack: str) -> str:
    return (ROOT / f"Pulumi.{stack}.yaml").read_text()


def run(root: Path, stack: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = preview_main(["--stack", stack, "--root", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_key_written_twice_is_refused_like_the_pulumi_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two `region` lines: the file is refused (exit 2) naming both lines, and no plan is printed."""
    text = shipped("l4").replace(
        "  gemma-serving:region: us-east4\n", "  gemma-serving:region: us-east4\n  gemma-serving:region: europe-west1\n"
    )
    code, out, err = run(root_with(tmp_path, "l4", text), "l4", capsys)
    assert code == 2
    assert out == ""
    assert err == (
        "error: Pulumi.l4.yaml is not valid YAML: line 7: mapping key 'gemma-serving:region' already defined at "
        "line 6; Pulumi refuses a file with a key written twice: keep one\n"
    )


def test_a_nested_key_written_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Duplicates inside a block (two maxNumSeqs) are found too, not only at the top."""
    text = shipped("l4").replace("    maxNumSeqs: 64\n", "    maxNumSeqs: 64\n    maxNumSeqs: 8\n")
    code, _, err = run(root_with(tmp_path, "l4", text), "l4", capsys)
    assert code == 2
    assert "mapping key 'maxNumSeqs' already defined at line" in err


def test_a_misspelt_config_block_names_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`confg:` is the one mistake; not a list of every setting as missing."""
    code, out, err = run(root_with(tmp_path, "l4", shipped("l4").replace("config:\n", "confg:\n", 1)), "l4", capsys)
    assert code == 2
    assert out == ""
    assert err == (
        "error: Pulumi.l4.yaml: unknown top-level key 'confg' (did you mean config?); a stack file's top level "
        "holds config, encryptedkey, encryptionsalt, environment, secretsprovider, and the settings go under "
        "config:\n"
    )
    assert "required but not set" not in err


def test_a_misspelt_provider_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`gcp:projet` would be ignored and the placeholder project used; it is refused with the suggestion."""
    text = shipped("tpu-v6e").replace("config:\n", "config:\n  gcp:projet: my-project\n", 1)
    code, out, err = run(root_with(tmp_path, "tpu-v6e", text), "tpu-v6e", capsys)
    assert code == 1
    assert out == ""
    assert err == (
        "Pulumi.tpu-v6e.yaml is not valid:\n"
        "  - gcp:projet: not a setting of the gcp provider, which would ignore it; did you mean gcp:project?\n"
    )


def test_real_provider_keys_pass() -> None:
    """gcp:project, gcp:region and gcp:zone are pulumi-gcp settings: no false alarm."""
    values = config_with("l4")
    values.update({"gcp:project": "p", "gcp:region": "us-east4", "gcp:zone": "us-east4-a"})
    assert settings_from_config(values).project == "p"


def test_a_misspelt_project_namespace_is_named() -> None:
    """`gemma-servng:region` is never read by the program: said so, instead of "region: required"."""
    values = config_with("l4")
    values["gemma-servng:region"] = values.pop(f"{P}region")
    assert problems_of(values) == (
        "gemma-servng:region: the namespace 'gemma-servng' is not this project's ('gemma-serving'), so the "
        "program never reads it; did you mean gemma-serving:region?"
    )


def test_a_misspelt_setting_is_one_problem_with_a_suggestion() -> None:
    """`maxNumSeq` instead of `maxNumSeqs`: one line naming the typo, not also "maxNumSeqs: required"."""
    assert problems_of(config_with("l4", vllm__maxNumSeq=64, vllm__maxNumSeqs=None)) == (
        f"{P}vllm.maxNumSeq: unknown key; did you mean maxNumSeqs?"
    )


def test_a_short_commit_id_is_named_as_one() -> None:
    """`1d2c2d7` is a commit, abbreviated: the message asks for the full id, not about branches."""
    message = problems_of(config_with("l4", model__source__huggingFace__revision="1d2c2d7"))
    assert message == (
        f"{P}model.source.huggingFace.revision: '1d2c2d7' is a short commit id (7 of 40 hex digits); give the full "
        "40-hex commit id, which names exactly one commit (copy it from the repo's commit history)"
    )


def test_the_longest_fitting_length_never_exceeds_the_models_maximum() -> None:
    """An oversized maxModelLen on an L4: the suggestion is capped at max_position_embeddings (262,144)."""
    message = problems_of(config_with("l4", vllm__maxModelLen=1_048_576))
    assert "exceeds gemma-4-12B-it-qat-w4a16-ct's max_position_embeddings 262,144; vLLM refuses to start" in message
    assert "The longest sequence that fits is 262,144 tokens: lower --max-model-len to at most that" in message


BILLION_LAUGHS = "\n".join(
    [
        "config:",
        "  gemma-serving:accelerator: nvidia-l4",
        '  x0: &x0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"  x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 10)}]" for i in range(1, 10)),
        "",
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BILLION_LAUGHS, "line 4: an alias (*x0); write the value out"),
        ("config:\n  gemma-serving:vllm: " + "[" * 100 + "]" * 100 + "\n", "line 2: nested more than 64 levels"),
        (
            "config:\n  gemma-serving:vllm: " + "[" * 100_000 + "]" * 100_000 + "\n",
            "exceeded maximum nesting depth",  # libyaml's own bound (1,000 levels), met first here
        ),
        (
            "config:\n  gemma-serving:cloudRun:\n    cpu: " + "9" * 5000 + "\n",
            "it holds an integer of more than 4,300 digits",
        ),
    ],
    ids=["billion-laughs", "nested-100", "nested-100000", "5000-digit-integer"],
)
def test_a_hostile_stack_file_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    """A billion-laughs alias bomb expanded into gigabytes once written out as config; deep nesting and a 5,000-digit
    number raised tracebacks. Each is an error naming the stack file, exit 2, nothing planned."""
    code, out, err = run(root_with(tmp_path, "l4", text), "l4", capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("error: Pulumi.l4.yaml is not valid YAML: ")
    assert expected in err


def test_a_stack_file_that_is_a_fifo_or_too_large_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO named Pulumi.<stack>.yaml waited forever for a writer; a 2 MiB one is more than a stack file holds."""
    root = root_with(tmp_path, "l4", shipped("l4"))
    stack_file = root / "Pulumi.l4.yaml"
    stack_file.unlink()
    os.mkfifo(stack_file)
    code, _, err = run(root, "l4", capsys)
    assert (code, err) == (2, f"error: {stack_file}: not a regular file (a FIFO); name a file\n")

    stack_file.unlink()
    stack_file.write_text(shipped("l4") + "#" * (2 << 20))
    code, _, err = run(root, "l4", capsys)
    assert (code, err) == (2, f"error: {stack_file}: larger than 1 MiB, the most read from such a file\n")
