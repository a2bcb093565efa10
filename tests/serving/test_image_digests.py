"""Images pulled by digest where one is recorded, and a tag never passed off as one (issue 46).

Why: the endpoint picker, the metrics adapter and vLLM were pinned by tag; a tag pushed again changes what
serves with no change to the plan. serving/data/image-digests.json holds each tag's digest (null when none
could be read: never invented), the program pulls `tag@digest` where it has one, and the plan says which.
"""

from __future__ import annotations

import pytest

from components.gke import metrics_adapter
from components.gke.gateway_manifests import PICKER_IMAGE
from preview.image_notes import TABLE, image_notes
from serving import image_digests
from serving.image_digests import ImageDigest, digest_of, pinned_reference
from serving.images import DEFAULT_IMAGES, METRICS_ADAPTER_TAG, PICKER_TAG
from stacks.loading import settings_from_config
from tests.conftest import stack_config

DIGEST = "sha256:" + "ab" * 32


def _adapter_tag() -> str:
    (deployment,) = [m for m in metrics_adapter.adapter_manifests() if m["kind"] == "Deployment"]
    return str(deployment["spec"]["template"]["spec"]["containers"][0]["image"])


def test_the_adapter_tag_is_the_vendored_manifests() -> None:
    """The plan's note and the digest lookup name the image the vendored Deployment actually runs."""
    assert _adapter_tag() == METRICS_ADAPTER_TAG


def test_every_image_the_program_runs_has_an_entry_with_its_source() -> None:
    """An image missing from the table would be pulled by tag with no note saying so."""
    for tag in {*DEFAULT_IMAGES.values(), PICKER_TAG, _adapter_tag()}:
        entry = digest_of(tag)
        assert entry is not None, tag
        assert entry.source
        assert entry.read
        assert entry.digest is not None or not entry.confirmed, f"{tag}: confirmed without a digest"


def test_the_picker_is_pulled_by_its_index_digest() -> None:
    """The picker's pod names the tag and the digest; the digest is the table's (unconfirmed: read from pins)."""
    entry = digest_of(PICKER_TAG)
    assert entry is not None
    assert entry.digest == "sha256:2e516fa1310da7be59b82beb1445362139597d6d553ef04d546716abe3aaaa70"
    assert f"{PICKER_TAG}@{entry.digest}" == PICKER_IMAGE
    assert entry.confirmed is False


def _with_digest(monkeypatch: pytest.MonkeyPatch, tag: str, confirmed: bool) -> None:
    table = dict(image_digests.image_digests())
    table[tag] = ImageDigest(tag, DIGEST, "a test's record", "2026-12-02", confirmed)
    monkeypatch.setattr(image_digests, "image_digests", lambda: table)


def test_a_recorded_vllm_digest_is_what_the_stack_pulls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the table records vllm/vllm-openai:v0.32.0's digest, every stack on it pulls tag@digest."""
    _with_digest(monkeypatch, "vllm/vllm-openai:v0.32.0", confirmed=True)
    settings = settings_from_config(stack_config("l4").values)
    assert settings.image_ref == f"vllm/vllm-openai:v0.32.0@{DIGEST}"
    expected = f"image: the vLLM image vllm/vllm-openai:v0.32.0 is pulled by its digest {DIGEST} ({TABLE})."
    assert image_notes(settings) == [expected]


def test_a_recorded_adapter_digest_reaches_the_adapters_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vendored manifest names a tag; the hardened Deployment pulls its recorded digest."""
    tag = _adapter_tag()
    _with_digest(monkeypatch, tag, confirmed=False)
    (deployment,) = [
        metrics_adapter.hardened(m) for m in metrics_adapter.adapter_manifests() if m["kind"] == "Deployment"
    ]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"{tag}@{DIGEST}"


def test_the_plan_says_an_image_is_pinned_by_its_tag_only() -> None:
    """Without a recorded digest the plan says so (and how to pin one), rather than implying a digest."""
    notes = image_notes(settings_from_config(stack_config("gke-l4x4").values))
    assert notes[0].startswith("image: the vLLM image vllm/vllm-openai:v0.32.0 is pinned by its release tag only")
    assert notes[1].startswith(f"image: the endpoint picker {PICKER_TAG} is pulled by the digest sha256:2e516fa1")
    assert "UNCONFIRMED at the registry" in notes[1]
    assert notes[2].startswith(f"image: the metrics adapter {_adapter_tag()} is pinned by its release tag only")


def test_a_digest_the_stack_names_is_kept_and_said() -> None:
    """`image: vllm/vllm-openai:v0.32.0@sha256:...` is pulled as written, and the plan names that digest."""
    values = dict(stack_config("l4").values)
    values["gemma-serving:image"] = f"vllm/vllm-openai:v0.32.0@{DIGEST}"
    settings = settings_from_config(values)
    assert settings.image_ref == f"vllm/vllm-openai:v0.32.0@{DIGEST}"
    assert pinned_reference(settings.image_ref) == settings.image_ref
    assert image_notes(settings) == [
        f"image: the vLLM image vllm/vllm-openai:v0.32.0 is pulled by the digest the stack names, {DIGEST}."
    ]
