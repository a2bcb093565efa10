"""Weight sources, import and registry settings: each mistake fails the preview with the key at fault.

Guards against: a branch name as revision (the weights change under a running stack), a drafter the
import leaves out of the bucket (vLLM fails to start with speculative decoding on), two sources for
one bucket path, and a derived-image tag that names no particular build.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.loading import settings_from_config
from tests.conftest import stack_config
from tests.stacks.test_settings import config_with, long_form, problems_of

# A commit-shaped id that no catalog repo pins, so it may stand for any repo's commit here.
REV = "5b8e0f2c7a1d94e36b0c8f5a2d7e41c93a6b0d18"


def hub(repo: str = "google/gemma-4-12B-it-qat-w4a16-ct", revision: str = REV, **extra: Any) -> dict[str, Any]:
    return {"huggingFace": {"repo": repo, "revision": revision, **extra}}


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_shipped_stacks_give_every_bucket_path_one_pinned_source(stack: str) -> None:
    """Each GPU stack imports what its server reads: the model, and on rtx6000 the MTP drafter too."""
    settings = settings_from_config(stack_config(stack).values)
    sources = settings.weight_sources()
    expected = {"target"} if stack == "l4" else {"target", "drafter"}
    assert set(sources) == expected
    paths = [path for path, _ in sources.values()]
    assert len(paths) == len(set(paths))
    for path, source in sources.values():
        assert source.hugging_face is not None
        assert len(source.revision) == 40
        assert path in " ".join(settings.serve_args())


@pytest.mark.parametrize("revision", ["main", "v1.0", "1d2c2d7"])
def test_revision_must_be_a_commit(revision: str) -> None:
    """A branch, tag or short hash can move under a running stack; only a 40-hex commit is accepted."""
    problems = problems_of(config_with(model__source=hub(revision=revision)))
    assert "gemma-serving:model.source.huggingFace.revision" in problems
    assert "40-hex commit id" in problems


def test_repo_must_be_owner_slash_name() -> None:
    """A repo id without its owner fails at load with the key, not with a 404 inside the import job."""
    problems = problems_of(config_with(model__source=hub(repo="gemma-4-12B")))
    assert "gemma-serving:model.source.huggingFace.repo: 'gemma-4-12B' is not a Hugging Face repo id" in problems


def test_source_names_exactly_one_origin() -> None:
    """A source naming both origins, or none, is ambiguous and refused."""
    both = {**hub(), "gcs": "gs://bucket/gemma"}
    assert "exactly one of huggingFace" in problems_of(config_with(model__source=both))
    assert "exactly one of huggingFace" in problems_of(config_with(model__source={}))


def test_gcs_source_must_be_a_gs_uri() -> None:
    """A GCS source written as an https URL is refused with the form to write instead."""
    problems = problems_of(config_with(model__source={"gcs": "https://storage.googleapis.com/b/x"}))
    assert "gemma-serving:model.source.gcs" in problems
    assert "gs://<bucket>/<path>" in problems


def test_drafter_without_source_is_refused_when_the_model_is_imported() -> None:
    """An imported model whose drafter has no source would leave the drafter out of the bucket."""
    problems = problems_of(config_with("rtx6000", model__drafterSource=None))
    assert "model.drafterSource: vllm.speculative.drafter 'gemma-4-12B-it-assistant' has no source" in problems


def test_drafter_source_without_drafter_is_refused() -> None:
    """A drafter source without a speculative drafter would import weights nothing serves."""
    problems = problems_of(config_with("l4", model__drafterSource=hub("google/gemma-4-12B-it-assistant")))
    assert "model.drafterSource: there is no vllm.speculative.drafter" in problems


@pytest.mark.parametrize("drafter", ["../gemma-4-12B-it-assistant", "gemma 4 assistant", "/"])
def test_drafter_must_be_a_path_inside_the_bucket(drafter: str) -> None:
    """A drafter path outside the bucket fails at load naming the key, on every platform, not in a component."""
    values = config_with("rtx6000", vllm__speculative__drafter=drafter)
    assert "vllm.speculative.drafter: " in problems_of(values)
    assert "must be a relative object path inside the model bucket" in problems_of(values)


def test_drafter_with_slashes_is_the_same_bucket_path() -> None:
    """Leading or trailing slashes on the drafter name the same directory the import fills and vLLM reads."""
    settings = settings_from_config(config_with("rtx6000", vllm__speculative__drafter="/gemma-4-12B-it-assistant/"))
    assert settings.drafter_path == "gemma-4-12B-it-assistant"
    assert settings.weight_sources()["drafter"][0] == "gemma-4-12B-it-assistant"


def test_drafter_needs_its_own_path() -> None:
    """A drafter at the model's own path would make the two imports overwrite each other's files."""
    values = long_form(stack_config("rtx6000").values)
    model = json.loads(values["gemma-serving:model"])
    vllm = json.loads(values["gemma-serving:vllm"])
    model["path"] = vllm["speculative"]["drafter"] = "my-finetune"
    values.update({"gemma-serving:model": json.dumps(model), "gemma-serving:vllm": json.dumps(vllm)})
    assert "the drafter needs its own bucket path" in problems_of(values)


def test_typo_in_a_source_names_the_allowed_keys() -> None:
    """A misspelled source key names the keys allowed there instead of importing nothing."""
    problems = problems_of(config_with(model__source={"huggingface": {"repo": "a/b", "revision": REV}}))
    assert "gemma-serving:model.source.huggingface: unknown key" in problems
    assert "huggingFace" in problems


def test_import_settings_have_bounds() -> None:
    """Import job settings out of bounds (no workers, more memory than allowed) fail at load, naming each key."""
    problems = problems_of(config_with(modelImport={"workers": 0, "memoryGib": 64}))
    assert "gemma-serving:modelImport.workers" in problems
    assert "gemma-serving:modelImport.memoryGib" in problems


def test_derived_image_tag_must_name_a_build() -> None:
    """A derived image tagged latest would not name one build; the tag is refused."""
    problems = problems_of(config_with(registry={"build": {"context": "images/vllm-gemma", "tag": "latest"}}))
    assert "gemma-serving:registry.build.tag" in problems


def test_build_context_stays_in_the_repository() -> None:
    """A build context outside the repository is refused: the image must build from this repository alone."""
    problems = problems_of(config_with(registry={"build": {"context": "../elsewhere", "tag": "v1"}}))
    assert "gemma-serving:registry.build.context" in problems
