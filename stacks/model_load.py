"""`model.load`: how vLLM reads the checkpoint, `fuse` (a Cloud Storage FUSE mount) or `stream` (gs:// direct).

Why a setting: the GPU stacks scale to zero, so the first user after a quiet hour waits for the weights to
be read. `stream` serves `gs://<bucket>/<path>` with vLLM's Run:ai Model Streamer over Direct VPC egress
(Google's Gemma 4 on Cloud Run pattern, docs.cloud.google.com/run/docs/run-gemma-on-cloud-run); `fuse`
keeps the mount, optionally with gcsfuse's file cache and parallel downloads. docs/cold-start.md compares
them. Written as `load: stream` or as a block (`load: {mode: stream, subnet: ...}`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from serving.cold_start import LoadMode
from stacks.base import SettingsModel
from stacks.bounds import MAX_MEMORY_GIB, MAX_STREAMER_CONCURRENCY

# A VPC network or subnetwork: its name (RFC 1035, at most 63 characters) or its
# projects/<p>/(global/networks|regions/<r>/subnetworks)/<name> path
# (https://cloud.google.com/run/docs/configuring/vpc-direct-vpc, --network/--subnet take either).
_NETWORK = re.compile(
    r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/(global/networks|regions/[a-z0-9-]+/subnetworks)/)?"
    r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)


class FuseLoad(SettingsModel):
    """The bucket mounted read-only through Cloud Storage FUSE (cloudRun.mount), read as local files."""

    mode: Literal[LoadMode.FUSE] = LoadMode.FUSE
    # gcsfuse's file cache on the instance's memory, which turns on its parallel downloads ("up to nine
    # times faster model load time", cloud.google.com/storage/docs/cloud-storage-fuse/file-caching). The
    # cached bytes count against cloudRun.memoryGib, so the cache needs fileCacheGib of room.
    parallel_downloads: bool = False
    # The file cache's size in GiB (gcsfuse file-cache-max-size-mb); needed with parallelDownloads.
    file_cache_gib: int | None = Field(default=None, ge=1, le=MAX_MEMORY_GIB)

    @model_validator(mode="after")
    def _cache_for_parallel(self) -> FuseLoad:
        if self.parallel_downloads and self.file_cache_gib is None:
            raise ValueError(
                "model.load.fileCacheGib: parallelDownloads reads through gcsfuse's file cache, which lives in the "
                "instance's memory; give it a size in GiB that fits beside vLLM (at least the checkpoint's size)"
            )
        if self.file_cache_gib is not None and not self.parallel_downloads:
            raise ValueError("model.load.fileCacheGib: only used with parallelDownloads: true")
        return self

    def mount_options(self) -> tuple[str, ...]:
        """gcsfuse flags (Cloud Run mount options) for the file cache and its parallel downloads."""
        if not self.parallel_downloads or self.file_cache_gib is None:
            return ()
        return (
            f"file-cache-max-size-mb={self.file_cache_gib * 1024}",
            "file-cache-enable-parallel-downloads=true",
            "cache-dir=/tmp/gcsfuse-cache",
        )


class StreamLoad(SettingsModel):
    """`vllm serve gs://<bucket>/<path> --load-format runai_streamer` over Direct VPC egress; no mount."""

    mode: Literal[LoadMode.STREAM]
    # The VPC network and subnet the instance's egress goes through; the subnet needs Private Google Access
    # so that storage.googleapis.com is reached without public IPs (the plan's notes say how).
    network: str = "default"
    subnet: str = "default"
    # Run:ai Model Streamer threads and CPU staging buffer; unset: sized from cloudRun.cpu and memoryGib
    # (serving/cold_start.py size_streamer).
    concurrency: int | None = Field(default=None, ge=1, le=MAX_STREAMER_CONCURRENCY)
    memory_limit_gib: int | None = Field(default=None, ge=1, le=MAX_MEMORY_GIB)

    @field_validator("network", "subnet")
    @classmethod
    def _vpc_name(cls, value: str) -> str:
        if not _NETWORK.match(value):
            raise ValueError(
                f"{value!r} is not a VPC network or subnet name (lowercase letters, digits and '-', at most 63) "
                "nor its projects/<p>/... path"
            )
        return value


ModelLoad = Annotated[FuseLoad | StreamLoad, Field(discriminator="mode")]


def load_block(value: Any) -> Any:  # noqa: ANN401 - raw stack data
    """`load: stream` is shorthand for `load: {mode: stream}`."""
    if isinstance(value, str):
        return {"mode": value}
    return value
