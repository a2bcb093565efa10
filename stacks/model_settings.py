"""The `model` block of a stack: which checkpoint to serve, where it comes from, and how vLLM reads it.

Why a module apart from stacks/settings.py: the catalog checks (stacks/catalog_checks.py) and the capacity
planner read this block alone; kept in the settings hub, they imported the hub that imports them (a circle of
type-only imports). Every stack variant holds one.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from serving.gcp_names import bucket_path_problem
from stacks.base import SettingsModel
from stacks.model_load import FuseLoad, ModelLoad, load_block
from stacks.weights import WeightSource


def bucket_path(value: str) -> str:
    """The path, refused with the reason when it cannot be an object path inside the model bucket."""
    problem = bucket_path_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class ModelSettings(SettingsModel):
    """Which checkpoint to serve and under what name clients ask for it.

    Short form: `id`, `variant` and `revision` name a catalog checkpoint (serving/catalog), and
    stacks/catalog_model.py fills `path`, `source` (and the drafter's) from it before validation.
    Long form: `path` and `source` directly.
    """

    # The catalog model, its variant, and the pinned commit of the variant's repo (short form).
    id: str | None = None
    variant: str | None = None
    revision: str | None = None
    # The pinned commit of the MTP drafter the catalog pairs with the variant (with vllm.speculative).
    drafter_revision: str | None = None
    # Directory of the checkpoint inside the model bucket (mounted at cloudRun.mount.mountPath).
    path: str
    served_name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")
    # Where `path` comes from; the import job copies it into the bucket. Unset: you fill the bucket yourself.
    source: WeightSource | None = None
    # Where the speculative drafter (vllm.speculative.drafter, its own bucket path) comes from.
    drafter_source: WeightSource | None = None
    # How vLLM reads the weights, the drafter's too: `fuse` (the default) or `stream` (stacks/model_load.py).
    load: ModelLoad = FuseLoad()

    @field_validator("path")
    @classmethod
    def _inside_bucket(cls, value: str) -> str:
        return bucket_path(value)

    @field_validator("load", mode="before")
    @classmethod
    def _load_shorthand(cls, value: Any) -> Any:  # noqa: ANN401 - raw stack data
        return load_block(value)
