"""Where `gemma-verify adapters promote` reads and writes the route table: the model bucket, or a local file.

Why compare-and-swap: two promotions at once (a person and the deploy workflow) must not both read the
table, each add their adapter, and the second write drop the first's. A write names the generation it read
(Cloud Storage's `ifGenerationMatch`, 0 for "must not exist yet"); a table that moved meanwhile is Google's
412, reported as RouteConflictError and never retried behind the user's back. A local file (a vLLM on this
machine, the live tests) does the same with its modification time and an atomic rename.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlsplit

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError
from serving.adapter_versions import RouteTable
from verify import UsageError

API = "storage"
UPLOAD_API = "storage-upload"
# A table is a few hundred bytes per adapter; more than this is not one this project wrote.
MAX_TABLE_BYTES = 1024 * 1024


class RouteConflictError(RuntimeError):
    """The table changed between this promotion's read and its write; nothing was written."""


class RouteStore(Protocol):
    """One route table: read with the generation it has, written only over that generation."""

    @property
    def location(self) -> str: ...
    def read(self) -> RouteTable: ...
    def write(self, table: RouteTable) -> None: ...


class FileRouteStore:
    """A table in a local file (`file:///path`), for a server on this machine."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def location(self) -> str:
        return self.path.as_uri()

    def _generation(self) -> int:
        try:
            return self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return 0

    def read(self) -> RouteTable:
        generation = self._generation()
        if generation == 0:
            return RouteTable({}, 0)
        text = self.path.read_bytes()[: MAX_TABLE_BYTES + 1].decode()
        return RouteTable.parse(text, generation)

    def write(self, table: RouteTable) -> None:
        if self._generation() != table.generation:
            raise RouteConflictError(f"{self.location} changed since it was read; nothing written")
        staged = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        staged.write_text(table.to_text(), encoding="utf-8")
        try:
            staged.replace(self.path)  # atomic: a replica reads the old table or the new, never half of one
        finally:
            with contextlib.suppress(FileNotFoundError):
                staged.unlink()


class GcsRouteStore:
    """A table object in the model bucket, through the project's Google client (remote/google_client.py)."""

    def __init__(self, apis: GoogleApis, bucket: str, name: str) -> None:
        self.apis = apis
        self.bucket = bucket
        self.name = name

    @property
    def location(self) -> str:
        return f"gs://{self.bucket}/{self.name}"

    def _path(self) -> str:
        return f"b/{quote(self.bucket, safe='')}/o/{quote(self.name, safe='')}"

    def read(self) -> RouteTable:
        try:
            metadata = self.apis.get(API, self._path(), {"fields": "generation,size"})
        except GoogleApiError as error:
            if error.code == 404:
                return RouteTable({}, 0)
            raise
        generation = int(metadata.get("generation") or 0)
        if int(metadata.get("size") or 0) > MAX_TABLE_BYTES:
            raise CannotCheckError(f"{self.location} is larger than {MAX_TABLE_BYTES} bytes: not a route table")
        text = self.apis.media(API, self._path(), {"generation": generation}).decode()
        return RouteTable.parse(text, generation)

    def write(self, table: RouteTable) -> None:
        params = {"name": self.name, "ifGenerationMatch": table.generation}
        path = f"b/{quote(self.bucket, safe='')}/o"
        try:
            self.apis.upload(UPLOAD_API, path, params, table.to_text().encode(), "application/json")
        except GoogleApiError as error:
            if error.code == 412:
                raise RouteConflictError(f"{self.location} changed since it was read; nothing written") from None
            raise


def store_at(location: str, apis: GoogleApis | None) -> RouteStore:
    """The store `location` names: `gs://bucket/object` (needs `apis`), `file:///path` or a plain path."""
    if location.startswith("gs://"):
        bucket, _, name = location.removeprefix("gs://").partition("/")
        if not bucket or not name:
            raise UsageError(f"--routes {location!r}: write gs://BUCKET/OBJECT")
        if apis is None:
            raise UsageError("--routes gs://...: Google credentials are needed to read and write the route table")
        return GcsRouteStore(apis, bucket, name)
    path = Path(urlsplit(location).path) if location.startswith("file://") else Path(location)
    if not path.parent.is_dir():
        raise UsageError(f"--routes {location!r}: {path.parent} is not a folder")
    return FileRouteStore(path)
