"""`adapters check`'s tensor check: the adapter a server loaded, held to the model's shapes and its rank.

Why besides the probes: vLLM 0.32 loads and serves an adapter whose tensors do not fit the model (a `lora_B`
of 96 rows for a 128-wide projection), and its answers may even look plausible. The import job refuses
such an adapter before it is written (job_scripts/import_weights.py); this check reads the same two things
from where the server loaded it (its `adapter_config.json` and each safetensors header, never the weights)
and applies the job's own rules, so an adapter placed in the folder by hand is caught too.

Where the files are: the version's folder in the stack's model bucket (`adapters/NAME@VERSION`, through
Cloud Storage's API), or the folder the server lists as the adapter's root when it exists on this machine
(a local server). The model's shapes come from the catalog model the stack serves, or from the served
model's own config.json beside a local server; without either the check says it could not run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import pydantic

from job_scripts.import_weights import (
    ADAPTER_CONFIG,
    AdapterCheck,
    adapter_config_problems,
    lora_tensor_problems,
    safetensors_header,
)
from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError
from serving.lora_shapes import LayerShapes, layer_shapes

API = "storage"
# safetensors' header is at most this much of a file (job_scripts/import_weights.py reads the same bound).
HEADER_READ_LIMIT = 16 * 1024 * 1024


class AdapterFiles(Protocol):
    """One adapter version's folder, wherever it is."""

    @property
    def where(self) -> str: ...
    def names(self) -> dict[str, int]: ...
    def read_text(self, name: str) -> str | None: ...
    def read_head(self, name: str, length: int) -> bytes: ...


class LocalFiles:
    """A folder on this machine (a local server's adapter root, or one given by hand)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def where(self) -> str:
        return str(self.folder)

    def names(self) -> dict[str, int]:
        return {path.name: path.stat().st_size for path in self.folder.iterdir() if path.is_file()}

    def read_text(self, name: str) -> str | None:
        path = self.folder / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def read_head(self, name: str, length: int) -> bytes:
        with (self.folder / name).open("rb") as file:
            return file.read(length)


class BucketFiles:
    """A version's folder in the model bucket, read through Cloud Storage's JSON API (ranges, not whole files)."""

    def __init__(self, apis: GoogleApis, bucket: str, prefix: str) -> None:
        self.apis = apis
        self.bucket = bucket
        self.prefix = prefix.rstrip("/") + "/"

    @property
    def where(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}"

    def _path(self, name: str) -> str:
        return f"b/{quote(self.bucket, safe='')}/o/{quote(self.prefix + name, safe='')}"

    def names(self) -> dict[str, int]:
        params = {"prefix": self.prefix, "fields": "items(name,size),nextPageToken"}
        items = self.apis.pages(API, f"b/{quote(self.bucket, safe='')}/o", "items", params)
        return {str(item["name"])[len(self.prefix) :]: int(item.get("size") or 0) for item in items}

    def read_text(self, name: str) -> str | None:
        try:
            return self.apis.media(API, self._path(name)).decode()
        except GoogleApiError as error:
            if error.code == 404:
                return None
            raise

    def read_head(self, name: str, length: int) -> bytes:
        return self.apis.media(API, self._path(name), first_bytes=length)


class TensorCheck(pydantic.BaseModel):
    """What the tensor check read and found; `note` says why it did not run, when it did not."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    where: str | None
    files: list[str]
    tensors: int
    shapes_from: str | None
    problems: list[str]
    note: str | None = None


def _reader(files: AdapterFiles, name: str) -> Callable[[int, int], bytes]:
    def read(start: int, length: int) -> bytes:
        if start + length > HEADER_READ_LIMIT + 8:
            raise ValueError(f"{name}: a header beyond {HEADER_READ_LIMIT} bytes")
        return files.read_head(name, start + length)[start:]

    return read


def check_tensors(
    files: AdapterFiles, *, name: str, rank: int | None, shapes: LayerShapes | None, shapes_from: str | None
) -> TensorCheck:
    """The adapter's config and safetensors headers against the model's shapes and the config's own rank
    (or the declared one): the import job's rules, applied to what the server loaded."""
    try:
        listed = files.names()
        config_text = files.read_text(ADAPTER_CONFIG)
    except (OSError, CannotCheckError, GoogleApiError) as error:
        return TensorCheck(
            where=files.where, files=[], tensors=0, shapes_from=shapes_from, problems=[], note=f"unreadable: {error}"
        )
    problems: list[str] = []
    config: dict[str, Any] = {}
    if config_text is None:
        problems.append(f"{files.where} has no {ADAPTER_CONFIG}")
    else:
        try:
            loaded = json.loads(config_text)
            config = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            problems.append(f"{ADAPTER_CONFIG} is not JSON")
    declared_rank = rank if rank is not None else config.get("r")
    modules = config.get("target_modules") or ["all-linear"]
    check = AdapterCheck(
        name=name,
        bases=(str(config.get("base_model_name_or_path") or ""),),
        rank=int(declared_rank) if isinstance(declared_rank, int) else 0,
        target_modules=tuple([modules] if isinstance(modules, str) else modules),
        served_model_path=str(config.get("base_model_name_or_path") or ""),
        layer_kinds=shapes.layer_kinds if shapes is not None else (),
        kind_shapes=shapes.kind_shapes if shapes is not None else {},
    )
    if config:
        problems += [p for p in adapter_config_problems(config, check) if "trained on" not in p]
    weights = sorted(n for n in listed if n.endswith(".safetensors"))
    if not weights:
        problems.append(f"{files.where} holds no .safetensors file")
    count = 0
    for weight in weights:
        try:
            tensors = safetensors_header(_reader(files, weight), listed[weight], weight)
        except (ValueError, OSError, CannotCheckError, GoogleApiError) as error:
            problems.append(str(error))
            continue
        count += len(tensors)
        problems += lora_tensor_problems(tensors, check, weight)
    return TensorCheck(
        where=files.where,
        files=weights,
        tensors=count,
        shapes_from=shapes_from,
        problems=problems,
        note=None if shapes is not None else "the model's shapes are unknown here: checked against the rank only",
    )


def shapes_of_local_model(root: str | None) -> tuple[LayerShapes | None, str | None]:
    """The served model's shapes from its config.json, when the server's model folder is on this machine."""
    if not root:
        return None, None
    path = Path(root) / "config.json"
    if not path.is_file():
        return None, None
    config: Mapping[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    text = config.get("text_config") or config
    return layer_shapes(text), str(path)
