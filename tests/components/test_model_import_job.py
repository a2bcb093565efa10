"""The import job's decisions and its run, against a local fake of the bucket (no cloud, no Hub).

Each test names the user-facing failure it guards against: a re-run that copies 10 GB again, a resumed
run that keeps a truncated or old-revision shard, a marker that claims a copy that is not there.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from job_scripts import script_source
from job_scripts.import_weights import (
    MARKER_NAME,
    CopyFailedError,
    Destination,
    Marker,
    Readable,
    SourceFile,
    StoredObject,
    Wanted,
    fingerprint,
    incomplete_reason,
    main,
    plan_import,
    run_import,
)

REV_A = "1d2c2d7f2466070e69d6fb3fd5ce9a7d75f2f6ee"
REV_B = "46d4c6f13f0ac0ad827b915669b8df9b81c64c51"
SOURCE = "hf://google/gemma-4-12B-it-qat-w4a16-ct"

MANIFEST_A = {
    "config.json": SourceFile(size=3, version="blob-config-a"),
    "model.safetensors": SourceFile(size=10, version="blob-weights-a"),
    "tokenizer.json": SourceFile(size=5, version="blob-tok"),
}
MANIFEST_B = {
    "config.json": SourceFile(size=3, version="blob-config-b"),
    "model-00001-of-00002.safetensors": SourceFile(size=6, version="blob-w1-b"),
    "model-00002-of-00002.safetensors": SourceFile(size=6, version="blob-w2-b"),
    "tokenizer.json": SourceFile(size=5, version="blob-tok"),
}


def stored(manifest: Mapping[str, SourceFile], *names: str) -> dict[str, StoredObject]:
    """A listing holding `names` exactly as the import writes them (size and version stamp)."""
    return {name: StoredObject(manifest[name].size, manifest[name].version) for name in names}


def marker_for(source: str, revision: str, manifest: Mapping[str, SourceFile]) -> Marker:
    return Marker(source, revision, (), {name: file.size for name, file in manifest.items()})


# --- plan_import: the pure decision ------------------------------------------------------------


def test_complete_copy_is_skipped() -> None:
    """Re-running the job (every `pulumi up` with a trigger change elsewhere, a retry) must not copy again."""
    listing = {**stored(MANIFEST_A, *MANIFEST_A), MARKER_NAME: StoredObject(100)}
    plan = plan_import(listing, marker_for(SOURCE, REV_A, MANIFEST_A), Wanted(SOURCE, REV_A), MANIFEST_A)
    assert plan.action == "skip"
    assert plan.copy == ()
    assert plan.delete == ()


def test_partial_copy_resumes_with_the_missing_files_only() -> None:
    """A run killed half-way (timeout, preemption) resumes: finished files stay, the rest is copied."""
    listing = stored(MANIFEST_A, "config.json", "tokenizer.json")
    plan = plan_import(listing, None, Wanted(SOURCE, REV_A), MANIFEST_A)
    assert plan.action == "copy"
    assert plan.copy == ("model.safetensors",)
    assert plan.keep == ("config.json", "tokenizer.json")
    assert plan.copy_bytes == 10
    assert "no completion marker" in plan.reason


def test_object_with_wrong_size_or_foreign_version_is_copied_again() -> None:
    """A short object or one not written by this import (no stamp) must never be served as the weights."""
    listing = {
        "config.json": StoredObject(3, "blob-config-a"),
        "model.safetensors": StoredObject(7, "blob-weights-a"),  # truncated
        "tokenizer.json": StoredObject(5, None),  # copied by hand, provenance unknown
    }
    plan = plan_import(listing, None, Wanted(SOURCE, REV_A), MANIFEST_A)
    assert plan.copy == ("model.safetensors", "tokenizer.json")
    assert plan.keep == ("config.json",)


def test_new_revision_replaces_changed_files_drops_stale_shards_and_the_old_marker() -> None:
    """Moving a stack to a new commit must not leave the old single shard beside the new two (vLLM would
    load all of them), and the old marker must go before anything is copied."""
    listing = {**stored(MANIFEST_A, *MANIFEST_A), MARKER_NAME: StoredObject(100)}
    plan = plan_import(listing, marker_for(SOURCE, REV_A, MANIFEST_A), Wanted(SOURCE, REV_B), MANIFEST_B)
    assert plan.action == "copy"
    assert plan.keep == ("tokenizer.json",)  # same blob in both revisions
    assert plan.copy == ("config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    assert plan.delete == ("model.safetensors",)
    assert plan.drop_marker is True
    assert REV_A in plan.reason
    assert REV_B in plan.reason


def test_marker_whose_files_went_missing_is_not_trusted() -> None:
    """Someone deleted a shard after the import: the marker alone must not make the job skip."""
    listing = {**stored(MANIFEST_A, "config.json", "tokenizer.json"), MARKER_NAME: StoredObject(100)}
    marker = marker_for(SOURCE, REV_A, MANIFEST_A)
    reason = incomplete_reason(listing, marker, Wanted(SOURCE, REV_A))
    assert reason is not None
    assert "model.safetensors" in reason
    plan = plan_import(listing, marker, Wanted(SOURCE, REV_A), MANIFEST_A)
    assert plan.copy == ("model.safetensors",)


def test_exclude_changes_the_selection_and_removes_excluded_objects() -> None:
    """Excluding files later (e.g. original/*) trims the prefix; the marker records the selection."""
    manifest = {**MANIFEST_A, "original/consolidated.pth": SourceFile(size=20, version="blob-orig")}
    listing = {**stored(manifest, *manifest), MARKER_NAME: StoredObject(100)}
    marker = marker_for(SOURCE, REV_A, manifest)
    plan = plan_import(listing, marker, Wanted(SOURCE, REV_A, ("original/*",)), manifest)
    assert plan.action == "copy"
    assert plan.copy == ()
    assert plan.delete == ("original/consolidated.pth",)


def test_source_with_no_files_is_an_error() -> None:
    """An exclude that filters everything out must fail loudly, not mark an empty copy complete."""
    with pytest.raises(ValueError, match="no files to copy"):
        plan_import({}, None, Wanted(SOURCE, REV_A, ("*",)), MANIFEST_A)


def test_unreadable_marker_proves_nothing() -> None:
    """A corrupt or partial completion marker must never make the job skip a copy; a valid one round-trips."""
    assert Marker.from_json("{not json") is None
    assert Marker.from_json(json.dumps({"source": SOURCE})) is None
    text = marker_for(SOURCE, REV_A, MANIFEST_A).to_json()
    parsed = Marker.from_json(text)
    assert parsed is not None
    assert parsed.revision == REV_A
    assert parsed.files["model.safetensors"] == 10
    assert json.loads(text)["source"] == SOURCE


def test_gcs_fingerprint_follows_the_listing() -> None:
    """A GCS source has no commits: a changed object must still be noticed."""
    changed = {**MANIFEST_A, "model.safetensors": SourceFile(size=10, version="crc-other:2")}
    assert fingerprint(MANIFEST_A) == fingerprint(dict(reversed(list(MANIFEST_A.items()))))
    assert fingerprint(MANIFEST_A) != fingerprint(changed)


# --- run_import: orchestration over a fake bucket and a fake source -----------------------------


@dataclass
class FakeBucket:
    """The model bucket under one prefix, in memory, recording the order of operations."""

    objects: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)

    def list(self) -> dict[str, StoredObject]:
        return {name: StoredObject(len(data), self.versions.get(name)) for name, data in self.objects.items()}

    def read_text(self, name: str) -> str | None:
        data = self.objects.get(name)
        return data.decode() if data is not None else None

    def write_text(self, name: str, text: str) -> None:
        self.events.append(f"write {name}")
        self.objects[name] = text.encode()
        self.versions[name] = None

    def delete(self, name: str) -> None:
        self.events.append(f"delete {name}")
        self.objects.pop(name, None)
        self.versions.pop(name, None)

    def upload(self, name: str, stream: Readable, version: str) -> None:
        self.events.append(f"upload {name}")
        data = b""
        while chunk := stream.read(4):
            data += chunk
        self.objects[name] = data
        self.versions[name] = version


@dataclass
class FakeSource:
    uri: str
    revision: str | None
    files: dict[str, bytes]
    versions: dict[str, str]
    fail: set[str] = field(default_factory=set)
    manifest_calls: int = 0

    def pinned_revision(self) -> str | None:
        return self.revision

    def manifest(self) -> dict[str, SourceFile]:
        self.manifest_calls += 1
        return {name: SourceFile(len(data), self.versions[name]) for name, data in self.files.items()}

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        if name in self.fail:
            raise ConnectionError("reset by peer")
        destination.upload(name, io.BytesIO(self.files[name]), file.version)

    def read_text(self, name: str) -> str | None:
        data = self.files.get(name)
        return data.decode() if data is not None else None

    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes:
        del file
        return self.files[name][start : start + length]


def hub(files: dict[str, bytes], revision: str = REV_A) -> FakeSource:
    return FakeSource(SOURCE, revision, files, {name: f"blob-{name}-{revision[:4]}" for name in files})


FILES = {"config.json": b"{}\n", "model.safetensors": b"0123456789", "tokenizer.json": b"tok!!"}
FIXED_CLOCK = datetime(2026, 11, 22, tzinfo=UTC)


def quiet(_severity: str, _message: str) -> None:
    pass


def run(source: FakeSource, bucket: FakeBucket) -> list[str]:
    result = run_import(source, bucket, workers=2, log=quiet, clock=lambda: FIXED_CLOCK)
    return sorted(result.copied)


def test_first_run_copies_everything_and_writes_the_marker_last() -> None:
    """The marker is the promise that the copy is complete: it is written only after every file."""
    bucket = FakeBucket()
    assert run(hub(FILES), bucket) == sorted(FILES)
    assert bucket.events[-1] == f"write {MARKER_NAME}"
    marker = Marker.from_json(bucket.read_text(MARKER_NAME))
    assert marker is not None
    assert (marker.source, marker.revision) == (SOURCE, REV_A)
    assert marker.completed_at == FIXED_CLOCK.isoformat()
    assert {name: bucket.objects[name] for name in FILES} == FILES


def test_second_run_skips_without_listing_the_hub() -> None:
    """A pinned revision already complete costs one bucket listing, not a Hub call or a copy."""
    bucket = FakeBucket()
    run(hub(FILES), bucket)
    events = len(bucket.events)
    again = hub(FILES)
    assert run(again, bucket) == []
    assert again.manifest_calls == 0
    assert len(bucket.events) == events


def test_failed_run_leaves_no_marker_and_the_next_run_resumes() -> None:
    """A transfer that keeps failing fails the run (Cloud Run retries it); nothing claims completion,
    and the retry copies only what is missing."""
    bucket = FakeBucket()
    flaky = hub(FILES)
    flaky.fail = {"model.safetensors"}
    waits: list[float] = []
    with pytest.raises(CopyFailedError, match=r"model\.safetensors"):
        run_import(flaky, bucket, workers=2, log=quiet, sleep=waits.append)
    assert waits == [2, 4]  # backed off between its three attempts, without waiting in the test
    assert MARKER_NAME not in bucket.objects
    assert sorted(bucket.objects) == ["config.json", "tokenizer.json"]
    assert run(hub(FILES), bucket) == ["model.safetensors"]
    assert MARKER_NAME in bucket.objects


def test_revision_change_deletes_the_old_marker_first_and_stale_files_last() -> None:
    """If the run to a new revision dies half-way, no marker may still vouch for the mixed prefix."""
    bucket = FakeBucket()
    run(hub(FILES), bucket)
    bucket.events.clear()
    new_files = {"config.json": b"{ }\n", "model-00001-of-00002.safetensors": b"01234", "tokenizer.json": b"tok!!"}
    assert run(hub(new_files, REV_B), bucket) == sorted(new_files)
    assert bucket.events[0] == f"delete {MARKER_NAME}"
    assert bucket.events[-2:] == ["delete model.safetensors", f"write {MARKER_NAME}"]
    assert sorted(bucket.objects) == sorted([*new_files, MARKER_NAME])


def test_gcs_source_is_skipped_when_its_listing_is_unchanged() -> None:
    """Without a commit id the fingerprint of the source listing stands in for the revision."""
    bucket = FakeBucket()
    source = FakeSource("gs://vertex-model-garden-public/gemma4", None, dict(FILES), {n: f"crc-{n}:1" for n in FILES})
    run(source, bucket)
    assert run(source, bucket) == []
    source.versions["model.safetensors"] = "crc-new:2"
    assert run(source, bucket) == ["model.safetensors"]


def test_job_script_is_self_contained() -> None:
    """The container runs the file with `python3 -c`: it may import only the standard library at the top
    (the Hub and GCS clients load inside the adapters), or the job dies before logging anything."""
    source = script_source()
    compile(source, "job.py", "exec")
    # One argv string: Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN).
    assert len(source.encode()) < 100_000
    top_level_imports = [
        line.split()[1]
        for line in source.splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    ]
    stdlib = {
        "fnmatch",
        "hashlib",
        "importlib",
        "json",
        "os",
        "re",
        "sys",
        "time",
        "collections.abc",
        "concurrent.futures",
    }
    stdlib |= {"dataclasses", "datetime", "typing"}
    assert set(top_level_imports) <= stdlib


def test_bad_job_configuration_exits_1_with_a_log_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A job started without its configuration fails with a readable message (and is retried), no trace."""
    assert main({"IMPORT_SOURCE": SOURCE}) == 1
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["severity"] == "ERROR"
    assert "IMPORT_BUCKET" in line["message"]
