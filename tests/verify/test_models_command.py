"""`verify models`: a model bucket's imports read through a local fake of the GCS JSON API.

The listing follows storage.v1's Objects shape over two pages; the markers are written by the import
job's own code (job_scripts/import_weights.py), so this reads exactly what the job leaves behind.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from job_scripts.import_weights import MARKER_NAME, Marker
from remote.google_client import GoogleApis
from remote.google_errors import GoogleApiError
from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, tokens
from verify import cli
from verify.models.bucket import IMPORT_MARKER
from verify.models.cli import print_inventory
from verify.models.inventory import CheckpointState
from verify.models.run import BucketUnreadableError, ModelsOptions, list_models, run_models, served_dirs

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "gemma-l4-models-bucket-3f9a2c1"
SERVED = "gemma-4-12B-it-qat-w4a16-ct"
LIST = rf"/storage/storage/v1/b/{BUCKET}/o"
MARKER_PATH = rf"/storage/storage/v1/b/{BUCKET}/o/{re.escape(SERVED)}%2F\.gemma-import-complete\.json"
REVISION = "1d2c2d7f2466070e69d6fb3fd5ce9a7d75f2f6ee"


def marker_body(**sizes: int) -> Body:
    files = {
        "chat_template.jinja": 13337,
        "config.json": 4316,
        "generation_config.json": 173,
        "model.safetensors": 10330582016,
        "tokenizer.json": 33384570,
        "tokenizer_config.json": 1157006,
        **sizes,
    }
    marker = Marker(
        source="hf://google/gemma-4-12B-it-qat-w4a16-ct",
        revision=REVISION,
        exclude=(),
        files=files,
        completed_at="2026-11-20T09:31:40Z",
    )
    body: Body = json.loads(marker.to_json())
    return body


def install_bucket(fake: FakeGoogle, marker: Body) -> None:
    def listing(_m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        page = "2" if query.get("pageToken") else "1"
        return 200, fixture(f"storage_objects_page{page}.json")

    fake.route("GET", LIST, listing)
    fake.route("GET", MARKER_PATH, marker)


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def test_the_marker_name_is_the_import_jobs() -> None:
    """A reader looking for another file name would call every import partial."""
    assert IMPORT_MARKER == MARKER_NAME


def test_a_complete_import_a_stopped_one_and_the_served_path(fake: FakeGoogle) -> None:
    """The listing over both pages: the served import complete with its source, revision, files and bytes;
    the 27B import without a marker partial; exit 0 because the served path is complete."""
    install_bucket(fake, marker_body())
    with GoogleApis(tokens, api_root=fake.url) as apis:
        found = run_models(apis, BUCKET, {"l4": [SERVED]})
    by_path = {c.path: c for c in found.checkpoints}
    served = by_path[SERVED]
    assert served.state is CheckpointState.COMPLETE
    assert (served.source, served.revision, served.files) == ("hf://google/gemma-4-12B-it-qat-w4a16-ct", REVISION, 6)
    assert served.bytes == 10330582016 + 33384570 + 1157006 + 13337 + 4316 + 173
    assert served.served_by == ["l4"]
    assert by_path["gemma-4-27B-it"].state is CheckpointState.PARTIAL
    assert by_path["gemma-4-27B-it"].files == 2
    assert found.exit_code == 0
    listed = [seen for seen in fake.seen if seen.path.endswith("/o")]
    assert [seen.query.get("pageToken") for seen in listed] == [
        None,
        [fixture("storage_objects_page1.json")["nextPageToken"]],
    ]
    assert all(seen.method == "GET" for seen in fake.seen)  # reads only
    out = io.StringIO()
    print_inventory(found, out)
    assert f"{SERVED}: complete, hf://google/gemma-4-12B-it-qat-w4a16-ct@{REVISION}, 6 files" in out.getvalue()
    assert "<- served by l4" in out.getvalue()


def test_a_file_that_changed_since_the_import_is_named(fake: FakeGoogle) -> None:
    """A marker whose files are not all there as listed must not pass as complete (vLLM would fail to load)."""
    install_bucket(fake, marker_body(**{"model.safetensors": 10330582017}))
    with GoogleApis(tokens, api_root=fake.url) as apis:
        found = run_models(apis, BUCKET, {"l4": [SERVED]})
    served = next(c for c in found.checkpoints if c.path == SERVED)
    assert served.state is CheckpointState.CHANGED
    assert served.problems == ["model.safetensors: 10330582016 bytes, the marker says 10330582017"]
    assert found.exit_code == 1


def test_a_served_path_with_nothing_under_it_is_missing(fake: FakeGoogle) -> None:
    install_bucket(fake, marker_body())
    with GoogleApis(tokens, api_root=fake.url) as apis:
        found = run_models(apis, BUCKET, {"rtx6000": ["gemma-4-31B-it"]})
    missing = next(c for c in found.checkpoints if c.path == "gemma-4-31B-it")
    assert missing.state is CheckpointState.MISSING
    assert missing.served_by == ["rtx6000"]
    assert found.exit_code == 1


def test_an_unreadable_bucket_is_googles_error(fake: FakeGoogle) -> None:
    fake.fail("GET", LIST, "error_permission_denied.json")
    with GoogleApis(tokens, api_root=fake.url) as apis, pytest.raises(GoogleApiError) as raised:
        run_models(apis, BUCKET, {})
    assert raised.value.permission_denied


def test_served_paths_come_from_the_stack_file() -> None:
    assert served_dirs("l4", ROOT) == [SERVED]


def test_the_command_without_credentials_exits_2_naming_the_bucket(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
    code = cli.main(["models", "--stack", "l4", "--bucket", BUCKET])
    assert code == 2
    assert f"cannot read gs://{BUCKET}" in capsys.readouterr().err


def test_the_typed_function_lists_the_named_bucket_for_the_stack(fake: FakeGoogle) -> None:
    """Guards against a tool (no argv) listing another bucket or other served paths than `verify models`:
    options.bucket wins over the stack's output, the stack file names the served path, and an unreadable
    bucket is one error naming it."""
    install_bucket(fake, marker_body())

    def google() -> GoogleApis:
        return GoogleApis(tokens, api_root=fake.url)

    found = list_models("l4", ModelsOptions(bucket=BUCKET), open_apis=google, root=ROOT)
    assert found.bucket == BUCKET
    assert {c.path: c.served_by for c in found.checkpoints}[SERVED] == ["l4"]
    assert found.exit_code == 0
    fake.fail("GET", LIST, "error_permission_denied.json")
    with pytest.raises(BucketUnreadableError, match=f"cannot read gs://{BUCKET}"):
        list_models(
            "l4", ModelsOptions(bucket=BUCKET), open_apis=lambda: GoogleApis(tokens, api_root=fake.url), root=ROOT
        )
