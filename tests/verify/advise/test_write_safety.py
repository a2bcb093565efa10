"""`advise --write NAME` writes one stack file of its own in the project folder, or nothing and says so.

Red team (issue 46): `--write` wrote through a symlink `Pulumi.NAME.yaml` to a file outside the project,
replaced an example stack's name (after which `make preview STACK=gke-l4x4` failed on "two files"), and wrote
names and revisions the preview then refused while printing that `make preview` plans it.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main as preview_main
from serving.catalog import catalog_model, pins_of
from tests.conftest import ROOT, ensure_event_loop
from verify import UsageError
from verify.advise.options import AdviseOptions, Slo
from verify.advise.report import Row
from verify.advise.run import run_advise
from verify.advise.write import PLACEHOLDER_REVISION, write_stack
from verify.advise.write_safety import MAX_STACK_NAME, NOTHING_WRITTEN, written_message
from verify.cli import main as verify_main

# A commit no catalog repo records (the shape of one; the import job would check it against the Hub).
COMMIT = "5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2"
QUESTION = ["--prompt-tokens", "8192", "--output-tokens", "512", "--users", "50", "--slo", "p95_ttft_ms=2000"]


@pytest.fixture(scope="module")
def row() -> Row:
    """A Cloud Run row (the platform whose service name bounds the stack name)."""
    answer = run_advise(AdviseOptions(prompt_tokens=8192, output_tokens=512, users=50, slo=Slo(p95_ttft_ms=2000)))
    return next(row for row in answer.rows if row.platform == "cloud-run")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder the preview runs in, with one example stack beside it as the real one has."""
    folder = tmp_path / "project"
    (folder / "examples").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py", "Pulumi.l4.yaml"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copy(ROOT / "examples" / "Pulumi.gke-l4x4.yaml", folder / "examples" / "Pulumi.gke-l4x4.yaml")
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _preview(project: Path, stack: str) -> tuple[int, str]:
    ensure_event_loop()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = preview_main(["--stack", stack, "--root", str(project), "--format", "json"])
    return code, err.getvalue()


@pytest.mark.parametrize("force", [False, True])
def test_a_symlink_is_never_written_through(project: Path, tmp_path: Path, row: Row, force: bool) -> None:
    """A `Pulumi.NAME.yaml` linking to a file outside the project (or to nowhere) is refused, `--force` or not,
    and the file it points at keeps its bytes."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's own file\n", encoding="utf-8")
    (project / "Pulumi.linked.yaml").symlink_to(outside)
    (project / "Pulumi.dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    for name in ("linked", "dangling"):
        with pytest.raises(UsageError, match=rf"symlink.*{NOTHING_WRITTEN}"):
            write_stack(project, name, row, revision=COMMIT, force=force)
    assert outside.read_text(encoding="utf-8") == "the user's own file\n"
    assert not (tmp_path / "nowhere.yaml").exists()


def test_an_example_stacks_name_is_refused_even_with_force(project: Path, row: Row) -> None:
    """`--write gke-l4x4 --force` wrote Pulumi.gke-l4x4.yaml beside examples/Pulumi.gke-l4x4.yaml, and the preview
    then refused the example ("two files"): the name is refused, and the example still previews alone."""
    before = _files(project)
    with pytest.raises(UsageError, match=rf"examples/Pulumi.gke-l4x4.yaml is an example.*{NOTHING_WRITTEN}"):
        write_stack(project, "gke-l4x4", row, revision=COMMIT, force=True)
    assert _files(project) == before


def test_an_existing_file_is_replaced_only_with_force(project: Path, row: Row) -> None:
    """The user's stack file is kept without `--force`; with it, replaced by the new stack (a regular file)."""
    mine = project / "Pulumi.mine.yaml"
    mine.write_text("config: {}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=rf"exists; pick another name or pass --force; {NOTHING_WRITTEN}"):
        write_stack(project, "mine", row, revision=COMMIT)
    assert mine.read_text(encoding="utf-8") == "config: {}\n"
    write_stack(project, "mine", row, revision=COMMIT, force=True)
    assert not mine.is_symlink()
    assert yaml.safe_load(mine.read_text(encoding="utf-8"))["config"]["gemma-serving:model"]["revision"] == COMMIT


@pytest.mark.parametrize(
    "name", ["-abc", "a" * (MAX_STACK_NAME + 1), "Prod", "a_b", "a.b", "", "../x", "a/b", "x y", "caf\u00e9"]
)
def test_a_name_the_program_or_the_preview_refuses_is_refused_before_writing(
    project: Path, row: Row, name: str
) -> None:
    """A leading '-' (`make preview STACK=-abc` reads an option), a name too long for the names the program
    derives, and characters a stack name cannot hold: each refused naming --write, nothing written."""
    before = _files(project)
    with pytest.raises(UsageError, match=rf"^--write .*{NOTHING_WRITTEN}$"):
        write_stack(project, name, row, revision=COMMIT)
    assert _files(project) == before


def test_the_name_bound_is_where_the_program_refuses(project: Path, row: Row) -> None:
    """Red team: a 39-character name was written and announced as planned, and the program refused it (its Cloud
    Run service `gemma-NAME-vllm` is over Cloud Run's 49 characters). The longest name --write takes previews; one
    character more, written by hand, is what the program refuses."""
    longest = "a" * MAX_STACK_NAME
    path = write_stack(project, longest, row, revision=COMMIT)
    assert _preview(project, longest)[0] == 0
    over = "a" * (MAX_STACK_NAME + 1)
    (project / f"Pulumi.{over}.yaml").write_bytes(path.read_bytes())
    code, err = _preview(project, over)
    assert code == 1
    assert "is not a Cloud Run service name" in err


def _other_repos_commit(row: Row) -> str:
    """A commit the catalog records for a repo that is not the row's."""
    own = catalog_model(row.model).variant(row.variant).repo
    for model_id in ("gemma-4-12b-it", "gemma-4-31b-it", "gemma-4-26b-a4b-it"):
        for variant in catalog_model(model_id).variants.values():
            pins = pins_of(variant.repo)
            if pins and variant.repo != own:
                return pins[0].revision
    raise AssertionError("the catalog records no pin")


@pytest.mark.parametrize("value", ["main", "5e1f0c2", "0" * 40, "deadbeef" * 5, COMMIT.upper(), COMMIT + "0"])
def test_a_revision_that_is_not_a_commit_is_refused(project: Path, row: Row, value: str) -> None:
    """A branch, a short id, the all-zero placeholder, a repeated pattern, upper case or 41 digits was written as
    `model.revision` (the import job or the preview refused it later): refused naming --revision."""
    with pytest.raises(UsageError, match=rf"^--revision .*{NOTHING_WRITTEN}$"):
        write_stack(project, "pinned", row, revision=value)
    assert not (project / "Pulumi.pinned.yaml").exists()


def test_another_repos_commit_is_refused_naming_both(project: Path, row: Row) -> None:
    """A commit the catalog records for another checkpoint is no commit of this one (a stack copied across
    models keeps the old pin): refused, nothing written."""
    with pytest.raises(UsageError, match=rf"--revision: .* is a commit of .*{NOTHING_WRITTEN}"):
        write_stack(project, "pinned", row, revision=_other_repos_commit(row))
    assert not (project / "Pulumi.pinned.yaml").exists()


def test_a_drafters_placeholder_is_never_announced_as_planned(project: Path, row: Row) -> None:
    """Red team: the message looked for the placeholder in `revision` only, so a stack whose MTP drafter kept the
    placeholder was announced as "`make preview` plans it", and the preview refused it."""
    drafting = row.model_copy(update={"speculative_tokens": 2})
    path = write_stack(project, "drafts", drafting, revision=COMMIT)
    model = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]["gemma-serving:model"]
    if model["drafterRevision"] != PLACEHOLDER_REVISION:
        pytest.skip("the catalog records this drafter's commit")
    message = written_message(path, "drafts")
    assert "plans it" not in message
    assert "PLACEHOLDER model.drafterRevision" in message
    assert _preview(project, "drafts")[0] == 1
    pinned = write_stack(project, "pinned", row, revision=COMMIT)
    assert "`make preview STACK=pinned` plans it" in written_message(pinned, "pinned")


def test_the_command_says_when_nothing_was_written(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused --write exits 2 before the advice is computed; an answer with no row writes nothing and says so
    (it said nothing); a written stack the checks pass is the one announced as planned."""
    monkeypatch.setenv("GEMMA_SERVING_ROOT", str(project))
    before = _files(project)
    assert verify_main(["advise", *QUESTION, "--write", "gke-l4x4", "--force"]) == 2
    assert NOTHING_WRITTEN in capsys.readouterr().err
    assert verify_main(["advise", *QUESTION, "--write", "ok", "--revision", "main"]) == 2
    assert "--revision 'main'" in capsys.readouterr().err
    impossible = ["--prompt-tokens", "8192", "--output-tokens", "512", "--users", "50", "--slo", "p95_ttft_ms=1"]
    assert verify_main(["advise", *impossible, "--write", "ok"]) == 1
    assert f"--write ok: {NOTHING_WRITTEN}" in capsys.readouterr().err
    assert _files(project) == before


def test_settings_the_preview_refuses_are_not_written(project: Path, row: Row) -> None:
    """A row whose stack the preview's settings loader refuses (here a max model length past the model's own) is
    not written to be refused later: the error quotes the loader's reason and says nothing was written."""
    too_long = row.model_copy(update={"max_model_len": 10_000_000})
    before = _files(project)
    with pytest.raises(UsageError, match=rf"the preview would refuse Pulumi.long.yaml: .*{NOTHING_WRITTEN}$"):
        write_stack(project, "long", too_long, revision=COMMIT)
    assert _files(project) == before
