"""Copy one model into the model bucket: the script the import job runs (`python3 -c <this file>`).

Why a script with pure decisions: the job must be safe to run again at any moment (a retried task, a
`pulumi up` after a failed one, a hand-started execution), so what it does follows from plain data only:
the bucket listing under its prefix, the completion marker, the wanted source and revision, and the
source's file manifest. `plan_import` turns those into skip / copy-these / delete-those, and tests run it
against a local fake of the listing. Everything else here is a thin adapter.

It runs inside the pinned vLLM image, which ships python3, huggingface_hub (a vLLM dependency) and
google-cloud-storage (vLLM's image installs runai-model-streamer[gcs]); so this file imports only the
standard library at module level and loads those clients in the adapters, when the job runs.

Environment (set by components/model_import.py): IMPORT_SOURCE (hf://owner/name or gs://bucket/path),
IMPORT_REVISION (a commit id, for hf://), IMPORT_BUCKET, IMPORT_PREFIX, IMPORT_EXCLUDE (JSON list of
globs), IMPORT_WORKERS, IMPORT_CHUNK_MIB, and HF_TOKEN from Secret Manager when the stack has one. The
token is handed to the Hub client and never printed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

# The object (under the prefix) that says the copy is complete, and for which source and revision.
MARKER_NAME = ".gemma-import-complete.json"
# Object metadata key: which version of its source file an object holds (so a resume keeps only those).
VERSION_KEY = "gemma-import-version"
# Per-file attempts inside one run; a failed run is retried by Cloud Run and resumes from the listing.
FILE_ATTEMPTS = 3
# A LoRA adapter's PEFT config (checked, then written with the served model as its base) and the record of
# where it came from; both are written by the job, not copied (serving/lora.py).
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_RECORD = "gemma-adapter.json"
# The PEFT module names vLLM can adapt on Gemma, which PEFT's `all-linear` stands for (stacks/adapters.py).
ADAPTABLE_MODULES = frozenset({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})


@dataclass(frozen=True)
class SourceFile:
    """One file of the source: its size, a version that changes with its content, and a hash if known."""

    size: int
    version: str
    sha256: str | None = None


@dataclass(frozen=True)
class StoredObject:
    """One object under the prefix: its size and the source version the import stamped on it (if any)."""

    size: int
    version: str | None = None


@dataclass(frozen=True)
class Wanted:
    """What the prefix must hold: this source, at this revision, without the excluded files."""

    source: str
    revision: str
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Marker:
    """The completion marker's content."""

    source: str
    revision: str
    exclude: tuple[str, ...]
    files: Mapping[str, int]
    completed_at: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "source": self.source,
                "revision": self.revision,
                "exclude": list(self.exclude),
                "files": dict(sorted(self.files.items())),
                "bytes": sum(self.files.values()),
                "completedAt": self.completed_at,
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str | None) -> Marker | None:
        """The marker, or None when it is absent or unreadable (an unreadable marker proves nothing)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            files = {str(name): int(size) for name, size in dict(data["files"]).items()}
            return cls(
                source=str(data["source"]),
                revision=str(data["revision"]),
                exclude=tuple(str(p) for p in data.get("exclude", [])),
                files=files,
                completed_at=str(data.get("completedAt", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


@dataclass(frozen=True)
class ImportPlan:
    """What one run does. `copy` and `delete` are names relative to the prefix."""

    action: Literal["skip", "copy"]
    reason: str
    copy: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    # A marker of another source, revision or selection is in the way: it goes first, so a run that
    # stops half-way never leaves a marker claiming a copy that is not there.
    drop_marker: bool = False
    copy_bytes: int = 0


def selected(manifest: Mapping[str, SourceFile], exclude: Iterable[str]) -> dict[str, SourceFile]:
    """The source files to copy: all but those matching an exclude glob (and never a marker)."""
    patterns = tuple(exclude)
    return {
        name: file
        for name, file in manifest.items()
        if name != MARKER_NAME and not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }


def incomplete_reason(listing: Mapping[str, StoredObject], marker: Marker | None, wanted: Wanted) -> str | None:
    """None when the prefix already holds a complete copy of `wanted`; otherwise why it does not."""
    if marker is None:
        return "no completion marker (first run, or an earlier run stopped before the end)"
    if (marker.source, marker.revision, marker.exclude) != (wanted.source, wanted.revision, wanted.exclude):
        return f"the marker is for {marker.source}@{marker.revision}, not {wanted.source}@{wanted.revision}"
    changed = sorted(name for name, size in marker.files.items() if name not in listing or listing[name].size != size)
    if changed:
        return f"{len(changed)} file(s) the marker lists are missing or changed, e.g. {changed[0]}"
    return None


def plan_import(
    listing: Mapping[str, StoredObject],
    marker: Marker | None,
    wanted: Wanted,
    manifest: Mapping[str, SourceFile],
) -> ImportPlan:
    """Decide what one run does, from the listing under the prefix, the marker and the source's manifest.

    Skip when the marker says this exact source, revision and selection is complete and its files are
    all there. Otherwise keep every object that already holds the right version of its file (resuming a
    partial copy), copy the rest, and delete objects under the prefix that the source no longer has (a
    previous revision's shards would otherwise be loaded beside the new ones).
    """
    reason = incomplete_reason(listing, marker, wanted)
    if reason is None:
        return ImportPlan(action="skip", reason=f"complete: {wanted.source}@{wanted.revision}")
    files = selected(manifest, wanted.exclude)
    if not files:
        raise ValueError(f"{wanted.source}@{wanted.revision} has no files to copy (after exclude {wanted.exclude})")
    keep: list[str] = []
    copy: list[str] = []
    for name, file in sorted(files.items()):
        have = listing.get(name)
        if have is not None and have.size == file.size and have.version == file.version:
            keep.append(name)
        else:
            copy.append(name)
    stale = sorted(name for name in listing if name not in files and name != MARKER_NAME)
    return ImportPlan(
        action="copy",
        reason=reason,
        copy=tuple(copy),
        keep=tuple(keep),
        delete=tuple(stale),
        drop_marker=MARKER_NAME in listing,
        copy_bytes=sum(files[name].size for name in copy),
    )


def fingerprint(manifest: Mapping[str, SourceFile]) -> str:
    """A revision for sources without commits (GCS): changes when any file's name, size or version does."""
    digest = hashlib.sha256()
    for name, file in sorted(manifest.items()):
        digest.update(f"{name}\t{file.size}\t{file.version}\n".encode())
    return f"listing-{digest.hexdigest()[:16]}"


# --- the run: orchestration over two small interfaces, so tests can drive it with fakes --------------


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class Destination(Protocol):
    """The model bucket, seen under the import's prefix (names are relative to it)."""

    def list(self) -> dict[str, StoredObject]: ...
    def read_text(self, name: str) -> str | None: ...
    def write_text(self, name: str, text: str) -> None: ...
    def delete(self, name: str) -> None: ...
    def upload(self, name: str, stream: Readable, version: str) -> None: ...


class Source(Protocol):
    """Where the files come from."""

    uri: str

    def pinned_revision(self) -> str | None: ...
    def manifest(self) -> dict[str, SourceFile]: ...
    def copy(self, name: str, file: SourceFile, destination: Destination) -> None: ...
    def read_text(self, name: str) -> str | None: ...
    # `length` bytes of the file from `start`, of the version `file` lists (a safetensors header).
    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes: ...


Log = Callable[[str, str], None]


def log_json(severity: str, message: str) -> None:
    """One structured log line (Cloud Logging reads `severity` and `message` from JSON on stdout)."""
    print(json.dumps({"severity": severity, "message": message}), flush=True)


class CopyFailedError(RuntimeError):
    """Some files could not be copied; the next run resumes with them."""


class AdapterMismatchError(ValueError):
    """The adapter contradicts what the stack declares or what the model is; nothing is written."""


class VersionTakenError(AdapterMismatchError):
    """The version's folder already holds a loadable adapter of another source: a version never changes."""


class SourceChangedError(CopyFailedError):
    """The source's listing changed while it was copied; nothing is marked loadable or complete."""


# The largest safetensors header read (the format allows 100 MB; a LoRA's header is a few KB per layer).
SAFETENSORS_HEADER_LIMIT = 16 * 1024 * 1024
# Bytes per element of safetensors' dtypes (github.com/huggingface/safetensors, the format's README).
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# PEFT's name of one LoRA tensor of a decoder layer: `...layers.<i>.<self_attn|mlp>.<module>.lora_<A|B>.weight`.
LORA_TENSOR = re.compile(r"(?:^|\.)layers\.(\d+)\.(self_attn|mlp)\.([A-Za-z0-9_]+)\.lora_([AB])\.weight$")
# Parts of a multimodal Gemma that vLLM 0.32 does not adapt.
TOWERS = ("vision_tower", "audio_tower", "embed_vision", "embed_audio", "multi_modal_projector")
# Shown per adapter before "and N more": enough to see the pattern, short enough to read.
PROBLEMS_SHOWN = 6


@dataclass(frozen=True)
class AdapterCheck:
    """What the stack declares about one version of a LoRA adapter (IMPORT_ADAPTER), the path of the model it
    serves on, and that model's adaptable modules per layer (serving/lora_shapes.py); empty `layer_kinds`:
    the model is outside the catalog and tensor shapes are checked for the rank only."""

    name: str
    bases: tuple[str, ...]
    rank: int
    target_modules: tuple[str, ...]
    served_model_path: str
    version: str = ""
    layer_kinds: tuple[str, ...] = ()
    kind_shapes: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name

    @classmethod
    def from_json(cls, text: str) -> AdapterCheck:
        data = json.loads(text)
        shapes = {
            str(kind): {str(module): (int(shape[0]), int(shape[1])) for module, shape in dict(modules).items()}
            for kind, modules in dict(data.get("kindShapes") or {}).items()
        }
        return cls(
            name=str(data["name"]),
            bases=tuple(str(base) for base in data["bases"]),
            rank=int(data["rank"]),
            target_modules=tuple(str(module) for module in data["targetModules"]),
            served_model_path=str(data["servedModelPath"]),
            version=str(data.get("version") or ""),
            layer_kinds=tuple(str(kind) for kind in data.get("layerKinds") or ()),
            kind_shapes=shapes,
        )


def _modules(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {str(item) for item in value}
    return set()


def adapter_config_problems(config: Mapping[str, Any], check: AdapterCheck) -> list[str]:
    """Every way the downloaded adapter_config.json contradicts the stack's `adapters` entry or what vLLM serves."""
    where = f"adapters {check.label}: {ADAPTER_CONFIG}"
    problems: list[str] = []
    if config.get("peft_type") != "LORA":
        problems.append(f"{where} peft_type is {config.get('peft_type')!r}; vLLM serves LORA adapters only")
    if config.get("r") != check.rank:
        problems.append(f"{where} r is {config.get('r')!r}, the stack says rank {check.rank}")
    base = str(config.get("base_model_name_or_path") or "")
    if base.lower() not in {name.lower() for name in check.bases}:
        problems.append(f"{where} was trained on {base!r}, not on the served model ({', '.join(check.bases)})")
    found = _modules(config.get("target_modules"))
    declared = set(check.target_modules)
    if "all-linear" in declared:
        extra = sorted(found - ADAPTABLE_MODULES - {"all-linear"})
        if extra:
            problems.append(f"{where} targets {extra}, which vLLM cannot adapt on Gemma")
    elif found != declared:
        problems.append(f"{where} targets {sorted(found)}, the stack says {sorted(declared)}")
    if config.get("use_dora"):
        problems.append(f"{where} is a DoRA adapter (use_dora); vLLM serves plain LoRA")
    if config.get("modules_to_save"):
        problems.append(f"{where} saves whole modules ({config.get('modules_to_save')}); vLLM loads LoRA A/B only")
    if config.get("rank_pattern"):
        problems.append(f"{where} sets per-module ranks (rank_pattern); declare one rank per adapter")
    return problems


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors file, as its header states it."""

    dtype: str
    shape: tuple[int, ...]


def safetensors_header(read: Callable[[int, int], bytes], size: int, name: str) -> dict[str, TensorInfo]:
    """The tensors a safetensors file holds, from its header alone: 8 bytes of little-endian header length,
    then that many bytes of JSON (`{name: {dtype, shape, data_offsets}}`, plus `__metadata__`). `read(start,
    length)` reads bytes of the file; ValueError names what is malformed (a cut or a non-safetensors file)."""
    if size < 8:
        raise ValueError(f"{name}: {size} bytes, shorter than a safetensors header")
    length = int.from_bytes(read(0, 8), "little")
    if length > SAFETENSORS_HEADER_LIMIT or 8 + length > size:
        raise ValueError(f"{name}: a header of {length} bytes in a file of {size} (not a safetensors file, or cut)")
    try:
        header = json.loads(read(8, length))
    except ValueError as error:
        raise ValueError(f"{name}: the safetensors header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{name}: the safetensors header is not a JSON object")
    data_bytes = size - 8 - length
    tensors: dict[str, TensorInfo] = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype = str(entry["dtype"])
            shape = tuple(int(dim) for dim in entry["shape"])
            begin, end = (int(offset) for offset in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{name}: tensor {key!r} has no dtype, shape and data_offsets") from None
        elements = 1
        for dim in shape:
            elements *= dim
        if any(dim < 0 for dim in shape) or not 0 <= begin <= end <= data_bytes:
            raise ValueError(f"{name}: tensor {key!r} lies outside the file (offsets {begin}..{end}, {data_bytes})")
        if dtype in DTYPE_BYTES and elements * DTYPE_BYTES[dtype] != end - begin:
            raise ValueError(f"{name}: tensor {key!r} of shape {list(shape)} {dtype} does not fill {end - begin} bytes")
        tensors[str(key)] = TensorInfo(dtype, shape)
    return tensors


def lora_tensor_problems(tensors: Mapping[str, TensorInfo], check: AdapterCheck, file: str) -> list[str]:
    """Every tensor that is not a LoRA A/B weight the model can take: a name outside its decoder layers' linear
    modules (a tower, an embedding, an MoE expert), a module the stack did not declare, a layer the model does
    not have, or a shape other than A `[rank, in]` / B `[out, rank]` of that layer's module."""
    where = f"adapters {check.label}: {file}"
    declared = set(check.target_modules)
    explicit = "all-linear" not in declared
    problems: list[str] = []
    pairs: dict[tuple[int, str], set[str]] = {}
    for key, tensor in sorted(tensors.items(), key=lambda item: _natural(item[0])):
        match = LORA_TENSOR.search(key)
        if match is None or any(tower in key for tower in TOWERS):
            problems.append(f"{where} tensor {key} is not a LoRA weight of a decoder layer's linear module")
            continue
        layer, module, part = int(match.group(1)), match.group(3), match.group(4)
        pairs.setdefault((layer, module), set()).add(part)
        if module not in ADAPTABLE_MODULES or (explicit and module not in declared):
            allowed = sorted(declared) if explicit else sorted(ADAPTABLE_MODULES)
            problems.append(f"{where} tensor {key} adapts {module}; allowed: {', '.join(allowed)}")
            continue
        if len(tensor.shape) != 2:
            problems.append(f"{where} tensor {key} has shape {list(tensor.shape)}, not a matrix")
            continue
        features: tuple[int, int] | None = None
        if check.layer_kinds:
            if layer >= len(check.layer_kinds):
                problems.append(f"{where} tensor {key} is for layer {layer}; the model has {len(check.layer_kinds)}")
                continue
            modules = check.kind_shapes.get(check.layer_kinds[layer], {})
            if module not in modules:
                problems.append(f"{where} tensor {key}: layer {layer} of the model has no {module}")
                continue
            features = modules[module]
        rows, columns = tensor.shape
        if part == "A":
            wanted = (check.rank, features[0] if features else columns)
        else:
            wanted = (features[1] if features else rows, check.rank)
        if (rows, columns) != wanted:
            kind = "in" if part == "A" else "out"
            size = f"; the model's {module} has {wanted[1 if part == 'A' else 0]} {kind}-features" if features else ""
            problems.append(
                f"{where} tensor {key} is {rows}x{columns}, expected {wanted[0]}x{wanted[1]} (rank {check.rank}{size})"
            )
    problems += [
        f"{where} layer {layer} {module} has lora_{''.join(parts)} only (A and B come in pairs)"
        for (layer, module), parts in sorted(pairs.items())
        if parts != {"A", "B"}
    ]
    if not pairs:
        problems.append(f"{where} holds no LoRA weights")
    return problems


def _natural(key: str) -> list[Any]:
    """Layer 2 before layer 10: the order a reader counts in."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def shown(problems: list[str]) -> str:
    """The first problems and how many more: one readable log line, however broken the adapter."""
    more = len(problems) - PROBLEMS_SHOWN
    return "; ".join(problems[:PROBLEMS_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def _ranges(source: Source, name: str, file: SourceFile) -> Callable[[int, int], bytes]:
    return lambda start, length: source.read_range(name, file, start, length)


def inspect_adapter(source: Source, manifest: Mapping[str, SourceFile], check: AdapterCheck) -> dict[str, Any]:
    """Read and check the source's adapter_config.json and every safetensors header before anything is written;
    the config, or AdapterMismatchError with every problem."""
    text = source.read_text(ADAPTER_CONFIG)
    if text is None:
        raise AdapterMismatchError(f"adapters {check.label}: the source has no {ADAPTER_CONFIG}; is it a PEFT adapter?")
    try:
        config = json.loads(text)
    except ValueError as error:
        raise AdapterMismatchError(f"adapters {check.label}: {ADAPTER_CONFIG} is not JSON ({error})") from None
    if not isinstance(config, dict):
        raise AdapterMismatchError(f"adapters {check.label}: {ADAPTER_CONFIG} is not a JSON object")
    problems = adapter_config_problems(config, check)
    weights = sorted(name for name in manifest if name.endswith(".safetensors"))
    pickles = sorted(name for name in manifest if name.endswith((".bin", ".pt", ".pth", ".pkl")))
    if pickles:
        problems.append(
            f"adapters {check.label}: {', '.join(pickles)} is a pickle (it runs code when loaded, and its tensors "
            "cannot be checked); save the adapter with safetensors"
        )
    if not weights:
        problems.append(f"adapters {check.label}: the source holds no .safetensors file of LoRA weights")
    for name in weights:
        file = manifest[name]
        try:
            tensors = safetensors_header(_ranges(source, name, file), file.size, name)
        except ValueError as error:
            problems.append(f"adapters {check.label}: {error}")
            continue
        problems += lora_tensor_problems(tensors, check, name)
    if problems:
        raise AdapterMismatchError(shown(problems))
    return config


def version_taken_reason(destination: Destination, listing: Mapping[str, StoredObject], wanted: Wanted) -> str | None:
    """Why this version's folder may not take `wanted`: it already holds a loadable adapter (its config is
    written only after every weight) or a completion marker, of another source or revision. None: free."""
    if ADAPTER_CONFIG not in listing and MARKER_NAME not in listing:
        return None
    record: Any = None
    try:
        record = json.loads(destination.read_text(ADAPTER_RECORD) or "null")
    except ValueError:
        record = None
    marker = Marker.from_json(destination.read_text(MARKER_NAME)) if MARKER_NAME in listing else None
    held = (
        (marker.source, marker.revision)
        if marker is not None
        else (str(record.get("source")), str(record.get("revision")))
        if isinstance(record, dict)
        else ("an unknown source", "?")
    )
    if held == (wanted.source, wanted.revision):
        return None
    return f"it already holds {held[0]}@{held[1]}, not {wanted.source}@{wanted.revision}"


def finalise_adapter(
    destination: Destination, check: AdapterCheck, wanted: Wanted, config: Mapping[str, Any]
) -> dict[str, int]:
    """Write the record of where the adapter came from, then its config with the served model as its base (vLLM's
    resolver compares the two, and loads nothing from a folder without it: so it goes last, after every weight);
    the names and sizes written, for the completion marker."""
    served = json.dumps({**config, "base_model_name_or_path": check.served_model_path}, indent=2, sort_keys=True)
    record = json.dumps(
        {
            "name": check.name,
            "version": check.version,
            "source": wanted.source,
            "revision": wanted.revision,
            "trainedOn": config.get("base_model_name_or_path"),
            "rank": check.rank,
            "targetModules": sorted(_modules(config.get("target_modules"))),
            "shapesChecked": bool(check.layer_kinds),
        },
        indent=2,
        sort_keys=True,
    )
    destination.write_text(ADAPTER_RECORD, record)
    destination.write_text(ADAPTER_CONFIG, served)
    return {ADAPTER_CONFIG: len(served.encode()), ADAPTER_RECORD: len(record.encode())}


@dataclass
class RunResult:
    plan: ImportPlan
    copied: list[str] = field(default_factory=list)


def run_import(
    source: Source,
    destination: Destination,
    *,
    exclude: tuple[str, ...] = (),
    workers: int = 8,
    log: Log = log_json,
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    sleep: Callable[[float], None] = time.sleep,
    adapter: AdapterCheck | None = None,
) -> RunResult:
    """Make the prefix hold a complete copy of `source`; safe to call again at any point.

    `sleep` waits between a file's attempts (2 s, then 4 s); tests pass one that returns at once. With
    `adapter`, the prefix is one immutable version of a LoRA adapter: its config and every safetensors header
    are checked before anything is written (AdapterMismatchError), a folder already holding another source is
    never touched (VersionTakenError), a source that changes while it is copied is not finished
    (SourceChangedError), and the config that makes vLLM load the folder is written after every weight.
    """
    if adapter is not None:
        exclude = (*exclude, ADAPTER_CONFIG, ADAPTER_RECORD)
    listing = destination.list()
    marker = Marker.from_json(destination.read_text(MARKER_NAME)) if MARKER_NAME in listing else None
    pinned = source.pinned_revision()
    if pinned is not None and incomplete_reason(listing, marker, Wanted(source.uri, pinned, exclude)) is None:
        log("INFO", f"already complete: {source.uri}@{pinned}; nothing to copy")
        return RunResult(ImportPlan(action="skip", reason=f"complete: {source.uri}@{pinned}"))
    manifest = source.manifest()
    wanted = Wanted(source.uri, pinned if pinned is not None else fingerprint(manifest), exclude)
    config: dict[str, Any] = {}
    if adapter is not None:
        if (taken := version_taken_reason(destination, listing, wanted)) is not None:
            raise VersionTakenError(
                f"adapters {adapter.label}: {taken}. A version never changes once loadable (replicas may serve it): "
                "declare a new adapters[].version for the new source; this folder is left as it is"
            )
        config = inspect_adapter(source, manifest, adapter)
        if not adapter.layer_kinds:
            log(
                "WARNING",
                f"adapters {adapter.label}: the served model is not in the catalog; shapes checked for rank only",
            )
    plan = plan_import(listing, marker, wanted, manifest)
    log("INFO", f"{plan.action}: {plan.reason}")
    if plan.action == "skip":
        return RunResult(plan)
    log(
        "INFO",
        f"copying {len(plan.copy)} file(s), {plan.copy_bytes / 1e9:.2f} GB; keeping {len(plan.keep)}; "
        f"removing {len(plan.delete)} stale",
    )
    if plan.drop_marker:
        destination.delete(MARKER_NAME)
    result = RunResult(plan)
    failures = _copy_all(source, destination, manifest, plan.copy, workers=workers, log=log, result=result, sleep=sleep)
    if failures:
        failed = ", ".join(sorted(failures)[:5])
        raise CopyFailedError(f"{len(failures)} file(s) failed ({failed}); run the job again to resume")
    for name in plan.delete:
        destination.delete(name)
    files = selected(manifest, exclude)
    after = destination.list()
    short = sorted(name for name, file in files.items() if name not in after or after[name].size != file.size)
    if short:
        raise CopyFailedError(f"after the copy {len(short)} file(s) are missing or short, e.g. {short[0]}")
    if adapter is not None and (changed := _changed(manifest, source.manifest())):
        raise SourceChangedError(
            f"adapters {adapter.label}: the source changed while it was copied ({len(changed)} file(s), e.g. "
            f"{changed[0]}); the version is not made loadable: run the job again to copy what the source holds now"
        )
    written = finalise_adapter(destination, adapter, wanted, config) if adapter is not None else {}
    sizes = {**{n: f.size for n, f in files.items()}, **written}
    done = Marker(wanted.source, wanted.revision, exclude, sizes, clock().isoformat())
    destination.write_text(MARKER_NAME, done.to_json())
    log("INFO", f"complete: {wanted.source}@{wanted.revision}, {len(files)} file(s)")
    return result


def _changed(before: Mapping[str, SourceFile], after: Mapping[str, SourceFile]) -> list[str]:
    """The files added, removed or rewritten between two listings of the source."""
    return sorted(
        name
        for name in set(before) | set(after)
        if name not in before or name not in after or before[name].version != after[name].version
    )


def _copy_all(
    source: Source,
    destination: Destination,
    manifest: Mapping[str, SourceFile],
    names: tuple[str, ...],
    *,
    workers: int,
    log: Log,
    result: RunResult,
    sleep: Callable[[float], None],
) -> dict[str, str]:
    failures: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {
            pool.submit(_copy_one, source, destination, name, manifest[name], log=log, sleep=sleep): name
            for name in names
        }
        for future in as_completed(futures):
            name = futures[future]
            error = future.exception()
            if error is None:
                result.copied.append(name)
            else:
                failures[name] = f"{type(error).__name__}: {error}"
                log("ERROR", f"{name}: {failures[name]}")
    return failures


def _copy_one(
    source: Source, destination: Destination, name: str, file: SourceFile, *, log: Log, sleep: Callable[[float], None]
) -> None:
    started = time.monotonic()
    for attempt in range(1, FILE_ATTEMPTS + 1):
        try:
            source.copy(name, file, destination)
            break
        except Exception as error:  # any transport error: retry, then report
            if attempt == FILE_ATTEMPTS:
                raise
            log("WARNING", f"{name}: attempt {attempt} failed ({type(error).__name__}); retrying")
            sleep(2**attempt)
    seconds = max(time.monotonic() - started, 1e-6)
    log("INFO", f"{name}: {file.size / 1e6:.1f} MB in {seconds:.0f} s ({file.size / 1e6 / seconds:.0f} MB/s)")


class VerifyingReader:
    """Reads through a stream, counting bytes and hashing them, so a truncated or wrong file is caught."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self.size = 0
        self._sha256 = hashlib.sha256()

    def read(self, n: int = -1, /) -> bytes:
        data = self._stream.read(n)
        self.size += len(data)
        self._sha256.update(data)
        return data

    def check(self, name: str, file: SourceFile) -> None:
        if self.size != file.size:
            raise ValueError(f"{name}: read {self.size} bytes, the source lists {file.size}")
        if file.sha256 and self._sha256.hexdigest() != file.sha256:
            raise ValueError(f"{name}: sha256 does not match the source's")


# --- adapters: the Hub and Cloud Storage clients, loaded only inside the job container --------------


def _client_module(name: str, image_hint: str) -> Any:  # noqa: ANN401 - a module loaded at run time
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise SystemExit(
            f"{name} is not installed in this image ({error}); set modelImport.image to an image with "
            f"{image_hint} (the vLLM CUDA image has both huggingface_hub and google-cloud-storage)"
        ) from None


class GcsDestination:
    """The model bucket under one prefix, through google-cloud-storage."""

    def __init__(self, bucket: str, prefix: str, chunk_bytes: int) -> None:
        storage = _client_module("google.cloud.storage", "google-cloud-storage")
        self.client = storage.Client()
        self.bucket = self.client.bucket(bucket)
        self.prefix = prefix.strip("/") + "/"
        self.chunk_bytes = chunk_bytes

    def _blob(self, name: str) -> Any:  # noqa: ANN401 - google.cloud.storage.Blob
        return self.bucket.blob(self.prefix + name, chunk_size=self.chunk_bytes)

    def list(self) -> dict[str, StoredObject]:
        found: dict[str, StoredObject] = {}
        for blob in self.client.list_blobs(self.bucket, prefix=self.prefix):
            name = str(blob.name)[len(self.prefix) :]
            if name and not name.endswith("/"):
                version = (blob.metadata or {}).get(VERSION_KEY)
                found[name] = StoredObject(size=int(blob.size or 0), version=str(version) if version else None)
        return found

    def read_text(self, name: str) -> str | None:
        blob = self.bucket.blob(self.prefix + name)
        return str(blob.download_as_text()) if blob.exists() else None

    def write_text(self, name: str, text: str) -> None:
        self.bucket.blob(self.prefix + name).upload_from_string(text, content_type="application/json")

    def delete(self, name: str) -> None:
        blob = self.bucket.blob(self.prefix + name)
        if blob.exists():
            blob.delete()

    def upload(self, name: str, stream: Readable, version: str) -> None:
        blob = self._blob(name)
        if blob.exists():
            blob.delete()  # a stale or partial object of another version
        blob.metadata = {VERSION_KEY: version}
        # A resumable upload written chunk by chunk: memory stays at one chunk per worker, and
        # if_generation_match=0 (create only) lets the client retry a chunk safely.
        with blob.open("wb", if_generation_match=0, content_type="application/octet-stream") as out:
            while data := stream.read(self.chunk_bytes):
                out.write(data)

    def rewrite_from(self, source_blob: Any, name: str, version: str) -> None:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
        """A server-side copy from another bucket: no bytes pass through the job."""
        blob = self._blob(name)
        blob.metadata = {VERSION_KEY: version}
        token, _, _ = blob.rewrite(source_blob)
        while token is not None:
            token, _, _ = blob.rewrite(source_blob, token=token)
        blob.reload()
        if (blob.metadata or {}).get(VERSION_KEY) != version:
            blob.metadata = {VERSION_KEY: version}
            blob.patch()


class HubSource:
    """A Hugging Face repo at one commit, streamed file by file (no local copy of a 10 GB shard)."""

    def __init__(self, repo: str, revision: str, token: str | None) -> None:
        self._hub = _client_module("huggingface_hub", "huggingface_hub")
        self.repo = repo
        self.revision = revision
        self.uri = f"hf://{repo}"
        self._token = token or None
        self._fs = self._hub.HfFileSystem(token=self._token)

    def pinned_revision(self) -> str | None:
        return self.revision

    def manifest(self) -> dict[str, SourceFile]:
        api = self._hub.HfApi(token=self._token)
        try:
            info = api.model_info(self.repo, revision=self.revision, files_metadata=True)
        except Exception as error:
            kind = type(error).__name__
            if kind in {"GatedRepoError", "RepositoryNotFoundError", "HfHubHTTPError"}:
                raise SystemExit(
                    f"{self.repo}@{self.revision}: {kind}. If the repo is gated, accept its license on the Hub with "
                    "the token's account, set huggingFace.gated: true in the stack and run "
                    "`pulumi config set --secret gemma-serving:hfToken <token>`"
                ) from None
            raise
        files: dict[str, SourceFile] = {}
        for sibling in info.siblings or []:
            lfs = getattr(sibling, "lfs", None)
            sha256 = lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)
            version = str(getattr(sibling, "blob_id", None) or sha256 or self.revision)
            files[str(sibling.rfilename)] = SourceFile(
                size=int(sibling.size or 0), version=version, sha256=str(sha256) if sha256 else None
            )
        return files

    def read_text(self, name: str) -> str | None:
        path = f"{self.repo}/{name}"
        if not self._fs.exists(path, revision=self.revision):
            return None
        with self._fs.open(path, "r", revision=self.revision) as stream:
            return str(stream.read())

    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes:
        del file  # the commit pins every file's content
        with self._fs.open(f"{self.repo}/{name}", "rb", revision=self.revision) as stream:
            stream.seek(start)
            return bytes(stream.read(length))

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        # block_size=0 opens a streaming read (one HTTP GET) instead of range-request blocks.
        with self._fs.open(f"{self.repo}/{name}", "rb", revision=self.revision, block_size=0) as stream:
            reader = VerifyingReader(stream)
            destination.upload(name, reader, file.version)
        try:
            reader.check(name, file)
        except ValueError:
            destination.delete(name)
            raise


class GcsSource:
    """A GCS prefix (e.g. a public Model Garden bucket), copied server-side."""

    def __init__(self, uri: str, destination: GcsDestination) -> None:
        bucket, _, prefix = uri.removeprefix("gs://").partition("/")
        self.uri = uri
        self._client = destination.client
        self._bucket = self._client.bucket(bucket)
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    def pinned_revision(self) -> str | None:
        return None

    def manifest(self) -> dict[str, SourceFile]:
        files: dict[str, SourceFile] = {}
        for blob in self._client.list_blobs(self._bucket, prefix=self._prefix):
            name = str(blob.name)[len(self._prefix) :]
            if name and not name.endswith("/"):
                files[name] = SourceFile(size=int(blob.size or 0), version=f"{blob.crc32c}:{blob.generation}")
        return files

    def read_text(self, name: str) -> str | None:
        blob = self._bucket.blob(self._prefix + name)
        return str(blob.download_as_text()) if blob.exists() else None

    def _blob(self, name: str, file: SourceFile) -> Any:  # noqa: ANN401 - google.cloud.storage.Blob
        """The object at the generation the manifest listed: a file rewritten since reads as missing (404),
        never as other bytes than those checked."""
        generation = file.version.rpartition(":")[2]
        return self._bucket.blob(self._prefix + name, generation=int(generation) if generation.isdigit() else None)

    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes:
        return bytes(self._blob(name, file).download_as_bytes(start=start, end=start + length - 1))

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        if not isinstance(destination, GcsDestination):
            raise TypeError("a GCS source copies server-side into a GcsDestination")
        destination.rewrite_from(self._blob(name, file), name, file.version)


def main(environ: Mapping[str, str] = os.environ) -> int:
    """The job's entry point: configuration from the environment, exit code 0 done, 1 failed (retried)."""
    try:
        source_uri = environ["IMPORT_SOURCE"]
        bucket = environ["IMPORT_BUCKET"]
        prefix = environ["IMPORT_PREFIX"]
        exclude = tuple(json.loads(environ.get("IMPORT_EXCLUDE", "[]")))
        workers = int(environ.get("IMPORT_WORKERS", "8"))
        chunk_bytes = int(environ.get("IMPORT_CHUNK_MIB", "64")) * 1024 * 1024
        adapter = AdapterCheck.from_json(environ["IMPORT_ADAPTER"]) if environ.get("IMPORT_ADAPTER") else None
    except (KeyError, ValueError, TypeError) as error:
        log_json("ERROR", f"bad job configuration: {type(error).__name__}: {error}")
        return 1
    destination = GcsDestination(bucket, prefix, chunk_bytes)
    source: Source
    if source_uri.startswith("hf://"):
        repo = source_uri.removeprefix("hf://")
        source = HubSource(repo, environ.get("IMPORT_REVISION", ""), environ.get("HF_TOKEN"))
    else:
        source = GcsSource(source_uri, destination)
    log_json("INFO", f"import {source_uri} into gs://{bucket}/{prefix.strip('/')}/ with {workers} workers")
    try:
        run_import(source, destination, exclude=exclude, workers=workers, adapter=adapter)
    except (CopyFailedError, ValueError) as error:
        log_json("ERROR", str(error))
        return 1
    return 0


USAGE = "usage: IMPORT_SOURCE=... IMPORT_BUCKET=... IMPORT_PREFIX=... python3 import_weights.py"

if __name__ == "__main__":
    if any(arg in {"-h", "--help"} for arg in sys.argv[1:]):
        # Run by the import job with its configuration in the environment, never with arguments.
        print(f"{USAGE}\n\n{__doc__}")
        sys.exit(0)
    sys.exit(main())
