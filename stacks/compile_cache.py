"""`compileCache`: keep vLLM's compile cache between revisions and node runs (serving/compile_cache.py).

Why a setting, off by default: a kept cache saves the compile phase of a start (docs/cold-start.md), but it
makes a path the serving identity can write (the model bucket's `compile-cache/` folder, nothing else), and
what is in it is compiled code the next start runs. A stack turns it on knowingly:

    gemma-serving:compileCache: true          # or {keep: true, maxAgeDays: 30}

TPU: the node's startup script restores the XLA cache before vLLM starts and saves it once vLLM serves.
Cloud Run: the folder is a read-write Cloud Storage volume at VLLM_CACHE_ROOT. GKE: not wired (refused).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from serving.compile_cache import CACHE_FOLDER
from stacks.base import SettingsModel


class CompileCacheSettings(SettingsModel):
    """Whether the compile cache is kept in the model bucket, and how long an entry lives there."""

    keep: bool = False
    # The bucket's lifecycle rule deletes cache objects this many days after they were written.
    max_age_days: int = Field(default=30, ge=1, le=365)


def cache_block(value: Any) -> Any:  # noqa: ANN401 - raw stack data
    """`compileCache: true` is shorthand for `compileCache: {keep: true}` (Pulumi passes the scalar as text)."""
    if isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in {"true", "false"}):
        return {"keep": value}
    return value


def cache_path_problems(paths: dict[str, str]) -> list[str]:
    """A checkpoint directory inside the cache folder would be writable by the serving identity: refused."""
    folder = CACHE_FOLDER.rstrip("/")
    return [
        f"{key}: {path!r} lies in the bucket's {CACHE_FOLDER} folder, which compileCache makes writable by the "
        "serving identity; keep the weights outside it"
        for key, path in paths.items()
        if path.strip("/") == folder or path.strip("/").startswith(CACHE_FOLDER)
    ]
