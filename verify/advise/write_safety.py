"""What `advise --write NAME` refuses before it writes a byte, and how it writes the file it may write.

Why: the command writes into the project folder the preview and `pulumi up` read, and red team (issue 46) found
that it wrote through a symlink `Pulumi.NAME.yaml` to a file outside the project, replaced (with `--force`)
the name of an example stack, after which `make preview STACK=gke-l4x4` failed on "two files", and wrote
names and revisions the preview then refused while printing that `make preview` plans it. So every refusal
comes before anything is written and says so, and a file is written only where none is (or, with `--force`,
over a regular file of the user's), never through a link.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import yaml

from preview.stack_file import EXAMPLES_DIR, StackFileError, read_stack_config
from serving.catalog import catalog_model
from serving.gcp_names import COMMIT_ID
from serving.input_files import InputFileError
from stacks.loading import StackConfigError, load_stack
from stacks.revisions import is_placeholder, revision_problem
from verify.advise.report import Row

# The all-zero commit the examples use where none is pinned: the import job refuses it, the preview too.
PLACEHOLDER_REVISION = "0" * 40
NOTHING_WRITTEN = "nothing written"
# The longest stack name every platform's names take. The program names the Cloud Run service
# `gemma-NAME-vllm`, which Cloud Run takes up to 49 characters (components/vllm_gpu_service.py refuses
# more: 39 characters of NAME are refused by `make preview`); the same 38 keep the TPU node, the Artifact
# Registry repositories (`gemma-NAME-bench-images`) and a GKE fleet's endpoint picker
# (`gemma-NAME-vllm-candidate-epp`) within the 63 Google and Kubernetes allow.
MAX_STACK_NAME = 38
# Lowercase letters, digits and '-', not starting with '-': `make preview STACK=-x` hands the preview `--stack -x`,
# which its argument parser reads as an option.
_STACK_NAME = re.compile(rf"^[a-z0-9][a-z0-9-]{{0,{MAX_STACK_NAME - 1}}}$")
# The settings check runs the written file with this in place of the placeholder commit, so that the placeholder
# (which the preview refuses on purpose, saying so) does not hide every other problem of the file.
_STAND_IN = hashlib.sha1(b"gemma-serving advise --write stand-in commit", usedforsecurity=False).hexdigest()


def name_problem(name: str) -> str | None:
    """Why ``--write NAME`` names no stack the preview and the program plan, or None."""
    if _STACK_NAME.match(name):
        return None
    return (
        f"--write {name!r}: a stack name is 1 to {MAX_STACK_NAME} lowercase letters, digits and '-', not starting "
        f"with '-' (the program names the Cloud Run service gemma-NAME-vllm, at most 49 characters; "
        f"`make preview STACK=-x` reads a leading '-' as an option)"
    )


def target_problem(root: Path, name: str, *, force: bool) -> str | None:
    """Why ``root/Pulumi.NAME.yaml`` may not be written, or None: an example's name (with ``--force`` too: the
    preview would then find two files), a symlink or anything but a regular file, an existing file without
    ``--force``."""
    path = root / f"Pulumi.{name}.yaml"
    example = root / EXAMPLES_DIR / path.name
    if example.exists() or example.is_symlink():
        return (
            f"--write {name!r}: {EXAMPLES_DIR}/{path.name} is an example stack's name (the preview would find two "
            "files for it); pick another name"
        )
    if path.is_symlink():
        return (
            f"--write {name!r}: {path.name} is a symlink; --write writes only a file of its own, never through a link"
        )
    if path.exists() and not path.is_file():
        return f"--write {name!r}: {path.name} exists and is not a regular file"
    if path.exists() and not force:
        return f"--write {name!r}: {path.name} exists; pick another name or pass --force"
    return None


def commit_problem(flag: str, value: str | None) -> str | None:
    """Why ``value`` of ``--revision`` or ``--drafter-revision`` is not a commit to pin, or None (also when unset)."""
    if value is None:
        return None
    if not COMMIT_ID.match(value):
        return f"{flag} {value!r}: a 40-hex commit id (lowercase), copied from the repo's commit history on the Hub"
    if is_placeholder(value):
        return f"{flag} {value!r}: a placeholder, not a commit; give the 40-hex commit you reviewed on the Hub"
    return None


def request_problems(root: Path, name: str, *, force: bool, revision: str | None, drafter: str | None) -> list[str]:
    """Everything wrong with a ``--write`` request that no row changes: checked before the advice is computed."""
    found = [name_problem(name), commit_problem("--revision", revision), commit_problem("--drafter-revision", drafter)]
    if found[0] is None:
        found.append(target_problem(root, name, force=force))
    return [problem for problem in found if problem]


def row_problems(row: Row, *, revision: str | None, drafter: str | None) -> list[str]:
    """A ``--revision`` (or ``--drafter-revision``) the catalog records for another repo than the row's."""
    variant = catalog_model(row.model).variant(row.variant)
    found = [revision_problem("--revision", variant.repo, revision) if revision else None]
    if drafter and row.speculative_tokens:
        found.append(revision_problem("--drafter-revision", variant.drafter, drafter))
    return [problem for problem in found if problem]


def settings_problems(root: Path, name: str, text: str) -> list[str]:
    """What the preview's settings loader refuses in ``text`` as ``Pulumi.NAME.yaml`` of ``root`` (the placeholder
    commit, refused on purpose and said so by `written_message`, stood in for by a commit-shaped value)."""
    with tempfile.TemporaryDirectory(prefix="advise-write-") as folder:
        shutil.copyfile(root / "Pulumi.yaml", Path(folder) / "Pulumi.yaml")
        (Path(folder) / f"Pulumi.{name}.yaml").write_text(
            text.replace(PLACEHOLDER_REVISION, _STAND_IN), encoding="utf-8"
        )
        try:
            config = read_stack_config(Path(folder), name)
            load_stack(config.values, project=config.project, root=root)
        except StackConfigError as error:
            return list(error.problems)
        except (StackFileError, InputFileError) as error:
            return [str(error)]
    return []


def write_new(path: Path, text: str, *, force: bool) -> None:
    """Write ``text`` at ``path``: created only where nothing is (O_EXCL, which a dangling link fails too), or, with
    ``force``, over a regular file by renaming a new file onto it (a rename replaces a link, never follows it)."""
    data = text.encode("utf-8")
    if not force:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        return
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o644)  # noqa: PTH101 - the descriptor's file, by the name mkstemp gave it
        os.replace(temporary, path)  # noqa: PTH105 - atomic, and replaces a link rather than following it
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def placeholder_keys(path: Path) -> list[str]:
    """The `model.*` revisions of a written stack that still hold the placeholder (the preview refuses each)."""
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    model = (document.get("config") or {}).get("gemma-serving:model") or {}
    return [f"model.{key}" for key in ("revision", "drafterRevision") if model.get(key) == PLACEHOLDER_REVISION]


def written_message(path: Path, name: str) -> str:
    """What the command says after writing: "plans it" only for a file whose checks all passed, never for one
    holding a placeholder the preview refuses."""
    held = placeholder_keys(path)
    if not held:
        return f"wrote {path.name}: `make preview STACK={name}` plans it"
    return (
        f"wrote {path.name}, with a PLACEHOLDER {' and '.join(held)}: no stack here or catalog entry pins that "
        f"checkpoint. Pin the commit you reviewed on the Hub (rerun with --revision/--drafter-revision <40-hex> "
        f"--force, or edit the file); `make preview STACK={name}` refuses the placeholder until then"
    )
