"""A bucket's listing and markers as checkpoints: which imports are complete, which are not, who serves what.

A checkpoint directory is *complete* when its marker lists files that are all there with the listed sizes
(the same test the import job makes before it skips a copy); *changed* when the marker is there but a file
it lists is missing or has another size; *partial* when objects are there without a marker (an import that
stopped, or is still running). Objects outside any marked directory are grouped by the directory a stack
serves when they fall under one, else by their first path segment.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import pydantic

from verify.models.bucket import IMPORT_MARKER, ImportMarker, StoredObject


class CheckpointState(enum.StrEnum):
    COMPLETE = "complete"
    CHANGED = "changed"  # a marker, but files it lists are missing or another size
    PARTIAL = "partial"  # objects without a marker
    MISSING = "missing"  # a path a stack serves with nothing under it


class Checkpoint(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    path: str
    state: CheckpointState
    source: str | None = None
    revision: str | None = None
    completed_at: str | None = None
    files: int
    bytes: int
    problems: list[str] = pydantic.Field(default_factory=list)
    served_by: list[str] = pydantic.Field(default_factory=list)


class BucketInventory(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    bucket: str
    checkpoints: list[Checkpoint]

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 every served path is complete; 1 a served path is not (the server cannot start from it)."""
        served = [c for c in self.checkpoints if c.served_by]
        return 0 if all(c.state is CheckpointState.COMPLETE for c in served) else 1


def inventory(
    bucket: str,
    listing: Sequence[StoredObject],
    read_marker: Callable[[str], ImportMarker | None],
    served: Mapping[str, Sequence[str]],
) -> BucketInventory:
    """``served``: stack name -> the directories it serves (model, drafter) in this bucket."""
    by_name = {item.name: item for item in listing}
    marked = sorted(
        (name[: -len(IMPORT_MARKER)].rstrip("/") for name in by_name if name.endswith(IMPORT_MARKER)),
        key=len,
        reverse=True,
    )
    served_by: dict[str, list[str]] = defaultdict(list)
    for stack, dirs in served.items():
        for directory in dirs:
            served_by[directory.strip("/")].append(stack)
    checkpoints = [_marked(path, by_name, read_marker) for path in marked]
    loose: dict[str, list[StoredObject]] = defaultdict(list)
    for item in listing:
        if any(_under(item.name, path) for path in marked):
            continue
        home = next((d for d in sorted(served_by, key=len, reverse=True) if _under(item.name, d)), None)
        loose[home or item.name.split("/", 1)[0]].append(item)
    checkpoints += [
        Checkpoint(
            path=path,
            state=CheckpointState.PARTIAL,
            files=len(items),
            bytes=sum(item.size for item in items),
            problems=["no completion marker: an import that stopped or is still running"],
        )
        for path, items in loose.items()
    ]
    known = {c.path for c in checkpoints}
    checkpoints += [
        Checkpoint(path=path, state=CheckpointState.MISSING, files=0, bytes=0, problems=["nothing under this path"])
        for path in served_by
        if path not in known
    ]
    ordered = sorted(checkpoints, key=lambda c: c.path)
    return BucketInventory(
        bucket=bucket,
        checkpoints=[c.model_copy(update={"served_by": sorted(served_by.get(c.path, []))}) for c in ordered],
    )


def _marked(path: str, by_name: Mapping[str, StoredObject], read: Callable[[str], ImportMarker | None]) -> Checkpoint:
    marker_name = f"{path}/{IMPORT_MARKER}" if path else IMPORT_MARKER
    marker = read(marker_name)
    present = [item for name, item in by_name.items() if _under(name, path) and name != marker_name]
    if marker is None:
        return Checkpoint(
            path=path,
            state=CheckpointState.PARTIAL,
            files=len(present),
            bytes=sum(item.size for item in present),
            problems=["the completion marker is unreadable: it proves nothing"],
        )
    prefix = f"{path}/" if path else ""
    problems = [
        f"{name}: {'missing' if found is None else f'{found.size} bytes, the marker says {size}'}"
        for name, size in sorted(marker.files.items())
        if (found := by_name.get(prefix + name)) is None or found.size != size
    ]
    return Checkpoint(
        path=path,
        state=CheckpointState.CHANGED if problems else CheckpointState.COMPLETE,
        source=marker.source,
        revision=marker.revision,
        completed_at=marker.completed_at or None,
        files=len(marker.files),
        bytes=sum(marker.files.values()),
        problems=problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else []),
    )


def _under(name: str, directory: str) -> bool:
    return not directory or name.startswith(f"{directory}/")
