"""Where each checkpoint in the model bucket comes from, and how the import job that copies it runs.

Why: the weights used to be copied by hand from a workstation, so nobody could say which revision a
stack served. Here every bucket path the server reads names exactly one source: a Hugging Face repo at a
pinned commit, or a GCS prefix. The import job (components/model_import.py) copies it, and `pulumi up`
runs that job again only when the source or revision changes.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from serving.gcp_names import COMMIT_ID
from stacks.base import SettingsModel
from stacks.images import PinnedImage
from stacks.revisions import revision_problem

# A Hugging Face repo id: `owner/name` (https://huggingface.co/docs/hub/repositories).
_HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
# A git commit id, the only revision that cannot move under a stack (branches and tags can).
# What `git log --oneline` and the Hub's history page show: the same commit, abbreviated.
_SHORT_COMMIT = re.compile(r"^[0-9a-f]{7,39}$")
# gs://bucket[/prefix]: bucket names are 3-63 lowercase letters, digits, '-', '_' and '.'.
_GCS_URI = re.compile(r"^gs://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9](/[A-Za-z0-9._/=-]*)?$")
_GLOB = re.compile(r"^[A-Za-z0-9._*?\[\]/-]+$")


class HuggingFaceSource(SettingsModel):
    """A Hugging Face model repo at one commit."""

    repo: str
    # A 40-hex commit id: copy it from the repo's "Files and versions" page (the commit history).
    revision: str
    # Gated repos (a license to accept on the Hub) need a token of an account that accepted it:
    # `pulumi config set --secret gemma-serving:hfToken hf_...`. Gemma 4 repos are Apache-2.0, not gated.
    gated: bool = False

    @field_validator("repo")
    @classmethod
    def _repo_id(cls, value: str) -> str:
        if not _HF_REPO.match(value):
            raise ValueError(f"{value!r} is not a Hugging Face repo id; write owner/name, e.g. google/gemma-4-12B-it")
        return value

    @field_validator("revision")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if _SHORT_COMMIT.match(value):
            raise ValueError(
                f"{value!r} is a short commit id ({len(value)} of 40 hex digits); give the full 40-hex commit id, "
                "which names exactly one commit (copy it from the repo's commit history)"
            )
        if not COMMIT_ID.match(value):
            raise ValueError(
                f"{value!r} is not a commit id: a branch or tag such as 'main' can move and change the weights under "
                "a running stack; give the 40-hex commit id from the repo's commit history"
            )
        return value

    @model_validator(mode="after")
    def _a_commit_of_this_repo(self) -> Self:
        """Not a placeholder, and not a commit the catalog records for another repo (stacks/revisions.py)."""
        if problem := revision_problem("revision", self.repo, self.revision):
            raise ValueError(problem)
        return self

    @property
    def uri(self) -> str:
        return f"hf://{self.repo}"


class WeightSource(SettingsModel):
    """Exactly one of: a Hugging Face repo at a pinned commit, or a GCS prefix (gs://bucket/path)."""

    hugging_face: HuggingFaceSource | None = None
    gcs: str | None = None
    # Glob patterns (relative to the source root) of files not to copy, e.g. original/* or *.gguf.
    exclude: tuple[str, ...] = ()

    @field_validator("gcs")
    @classmethod
    def _gcs_uri(cls, value: str | None) -> str | None:
        if value is not None and not _GCS_URI.match(value):
            raise ValueError(f"{value!r} is not a GCS prefix; write gs://<bucket>/<path>")
        return value.rstrip("/") if value else value

    @field_validator("exclude")
    @classmethod
    def _globs(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            if not _GLOB.match(pattern):
                raise ValueError(f"exclude pattern {pattern!r}: use letters, digits, '.', '_', '-', '/', '*', '?', []")
        return patterns

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.hugging_face is None) == (self.gcs is None):
            raise ValueError(
                "a weight source names exactly one of huggingFace: {repo, revision} or gcs: gs://<bucket>/<path>"
            )
        return self

    @property
    def uri(self) -> str:
        """Where the files come from: hf://owner/name or gs://bucket/path."""
        if self.hugging_face is not None:
            return self.hugging_face.uri
        assert self.gcs is not None
        return self.gcs

    @property
    def revision(self) -> str:
        """The pinned commit for Hugging Face; empty for GCS (the job fingerprints the listing instead)."""
        return self.hugging_face.revision if self.hugging_face else ""

    @property
    def needs_token(self) -> bool:
        return self.hugging_face is not None and self.hugging_face.gated


class ModelImportSettings(SettingsModel):
    """How the Cloud Run job that copies weights into the bucket runs."""

    # Files copied at once; each holds one chunk (chunkMib) of memory while it streams.
    workers: int = Field(default=8, ge=1, le=64)
    chunk_mib: int = Field(default=64, ge=8, le=512)
    cpu: int = Field(default=4, ge=1, le=8)
    memory_gib: int = Field(default=8, ge=1, le=32)
    # One attempt's limit; a retried attempt resumes where the last one stopped.
    timeout_minutes: int = Field(default=120, ge=5, le=24 * 60)
    max_retries: int = Field(default=3, ge=0, le=10)
    # Run the job from `pulumi up` (pulumi-command calls `gcloud run jobs execute --wait` on the deployer's
    # machine), so the service rolls out only after the weights exist. Off: run it by hand (see README).
    run_on_up: bool = True
    # The job's image; unset means the stack's vLLM CUDA image (it ships python3, huggingface_hub and
    # google-cloud-storage), pulled through the same registry as the service.
    image: PinnedImage | None = None
