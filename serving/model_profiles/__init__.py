"""Model profiles: the checkpoints our stacks serve, as the capacity planner needs them.

Why data files: every number the planner uses about a checkpoint (its `config.json` fields, the bytes of
its weights) lives in one JSON file per checkpoint next to this module, with the source of each number
and a list of the numbers that are estimates. A stack serving another checkpoint points at that
checkpoint's `config.json` instead (`profile_from_config_file`), and the same reader parses both.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from serving.input_files import (
    CHECKPOINT_CONFIG_MAX_BYTES,
    CHECKPOINT_INDEX_MAX_BYTES,
    InputFileError,
    read_json_file,
)
from serving.model_profiles.architecture import ConfigError, architecture_from_config
from serving.model_profiles.files import ProfileFile, WeightPart, Weights
from serving.planner import ModelProfile

__all__ = [
    "ConfigError",
    "ProfileFile",
    "WeightPart",
    "Weights",
    "builtin_profile",
    "builtin_profile_names",
    "find_builtin_profile",
    "profile_from_config_file",
    "weight_bytes_of_checkpoint",
]


def _profile_files() -> dict[str, ProfileFile]:
    files = {}
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".json"):
            profile = ProfileFile.model_validate_json(entry.read_text(encoding="utf-8"))
            files[profile.name] = profile
    return files


@cache
def builtin_profile_files() -> dict[str, ProfileFile]:
    """Every built-in profile, by name (read once): the files here (calibration models) and one per
    checkpoint of the model catalog (each variant and each MTP drafter of serving/catalog)."""
    from serving.catalog import catalog  # noqa: PLC0415 - the catalog builds its profiles with this package

    files = _profile_files()
    for model in catalog().values():
        for name in model.variants:
            profile = model.profile_file(name)
            files[profile.name] = profile
        for drafter in model.drafters.values():
            files[drafter.leaf] = drafter.profile_file()
    return files


def builtin_profile_names() -> tuple[str, ...]:
    return tuple(sorted(builtin_profile_files()))


@cache
def builtin_profile(name: str) -> ModelProfile:
    """A built-in profile by its name; the error lists the names there are. Built once per name (the profile is
    frozen and its file read-only): stack loading asks for the same few thousands of times in a sweep."""
    files = builtin_profile_files()
    if name not in files:
        raise KeyError(f"no built-in model profile {name!r}; known: {', '.join(sorted(files))}")
    return files[name].to_profile()


def find_builtin_profile(model_path: str) -> ModelProfile | None:
    """The built-in profile whose name is the last part of a model path (case-insensitive), if any."""
    leaf = model_path.rstrip("/").rsplit("/", 1)[-1].lower()
    for name in builtin_profile_files():
        if name.lower() == leaf:
            return builtin_profile(name)
    return None


def weight_bytes_of_checkpoint(directory: Path) -> int:
    """A checkpoint's weight bytes: its index's `metadata.total_size`, else the size of its safetensors."""
    index = directory / "model.safetensors.index.json"
    if index.exists():
        try:
            document = read_json_file(index, max_bytes=CHECKPOINT_INDEX_MAX_BYTES)
        except InputFileError as error:
            raise ConfigError(str(error)) from None
        metadata = document.get("metadata", {}) if isinstance(document, dict) else {}
        total = metadata.get("total_size") if isinstance(metadata, dict) else None
        if isinstance(total, int):
            return total
    shards = sorted(directory.glob("*.safetensors"))
    if not shards:
        raise ConfigError(
            f"{directory}: no model.safetensors.index.json with metadata.total_size and no *.safetensors files; "
            "give the weight bytes explicitly"
        )
    return sum(shard.stat().st_size for shard in shards)


def profile_from_config_file(
    config_path: Path, *, weight_bytes: int | None = None, name: str | None = None
) -> ModelProfile:
    """A profile from any checkpoint's `config.json` (a regular file of at most 1 MiB); weights from beside it
    unless given. Errors name the file and the field, never a value of it."""
    try:
        config = read_json_file(config_path, max_bytes=CHECKPOINT_CONFIG_MAX_BYTES)
    except InputFileError as error:
        raise ConfigError(f"cannot read a JSON config: {error}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{config_path}: a config.json must hold a JSON object")
    size = weight_bytes if weight_bytes is not None else weight_bytes_of_checkpoint(config_path.parent)
    source = "given" if weight_bytes is not None else f"safetensors beside {config_path}"
    return ModelProfile(
        name=name or config_path.parent.name,
        architecture=architecture_from_config(config),
        weight_bytes=size,
        weight_source=source,
    )
