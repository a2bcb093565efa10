"""The model bucket as the GCS JSON API (storage v1) shows it: object names and sizes, and import markers.

Why the JSON API through the project's Google client (remote/google_client.py) and not google-cloud-storage:
the same reason as every other ops read (one httpx client, a root URL tests point at a local fake); two
methods are needed:
``objects.list`` (``GET b/{bucket}/o``, paged by ``nextPageToken``, ``size`` a uint64 as a JSON string)
and ``objects.get`` with ``alt=media`` for a marker's content (storage.v1.json: objects.get
``supportsMediaDownload``). The marker is what job_scripts/import_weights.py writes when a copy is
complete (``Marker.to_json``): ``{source, revision, exclude, files: {name: bytes}, bytes, completedAt}``.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pydantic

from remote.google_client import GoogleApis

API = "storage"
# job_scripts/import_weights.py MARKER_NAME: written last, after every file, by the import job.
IMPORT_MARKER = ".gemma-import-complete.json"
# A bucket of checkpoints holds thousands of objects at most; 1000 per page (the API's maximum) x 50.
PAGE_SIZE = 1000
MAX_PAGES = 50


# Cloud Storage bucket names: 3-63 lowercase letters, digits, '-', '_' and '.', starting and ending with a
# letter or digit (https://cloud.google.com/storage/docs/buckets#naming).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]")


def bucket_name(value: str, *, where: str) -> str:
    """``value`` when it is a bucket name; ValueError naming ``where`` and the rule otherwise."""
    if not _BUCKET_NAME.fullmatch(value):
        raise ValueError(
            f"{where} {value!r} is not a Cloud Storage bucket name (3-63 lowercase letters, digits, '-', '_', '.')"
        )
    return value


class StoredObject(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    name: str
    size: int  # storage.v1 sends uint64 as a string; pydantic reads it as a number
    updated: str | None = None


class ImportMarker(pydantic.BaseModel):
    """A completion marker's content (job_scripts/import_weights.py ``Marker.to_json``)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    source: str
    revision: str
    exclude: tuple[str, ...] = ()
    files: dict[str, int]
    completed_at: str = pydantic.Field(default="", alias="completedAt")


def list_objects(apis: GoogleApis, bucket: str) -> list[StoredObject]:
    """Every object in ``bucket`` (name, size, updated), following pages up to ``MAX_PAGES``."""
    params = {"maxResults": PAGE_SIZE, "fields": "items(name,size,updated),nextPageToken"}
    return [
        StoredObject.model_validate(item)
        for item in apis.pages(API, f"b/{quote(bucket, safe='')}/o", "items", params, max_pages=MAX_PAGES)
    ]


def read_marker(apis: GoogleApis, bucket: str, name: str) -> ImportMarker | None:
    """The marker object's content; None when it is not a marker this project wrote (it proves nothing)."""
    path = f"b/{quote(bucket, safe='')}/o/{quote(name, safe='')}"
    try:
        return ImportMarker.model_validate(apis.get(API, path, {"alt": "media"}))
    except pydantic.ValidationError:
        return None
