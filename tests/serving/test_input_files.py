"""The one reader of files someone names: regular files under a cap, JSON nested no deeper than a bound.

Guards against the hangs and tracebacks of issue 46: /dev/zero read forever, a FIFO waited on, a 3 GB file
loaded whole, 200,000 nested arrays recursing; and against counting brackets inside strings as nesting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.input_files import InputFileError, inside, json_nesting, loads_json, read_regular_file


@pytest.mark.parametrize(
    ("text", "depth"),
    [("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[", "]]"]', 1), ('["\\\\", [1]]', 2), ('["\\"[["]', 1)],
)
def test_nesting_counts_containers_not_brackets_in_strings(text: str, depth: int) -> None:
    """A config value holding `[[[` in a string is not deep; an escaped quote does not end the string."""
    assert json_nesting(text) == depth


def test_deep_json_is_refused_before_json_recurses() -> None:
    with pytest.raises(InputFileError, match="nested 200000 levels deep; at most 64 are read"):
        loads_json("[" * 200_000 + "]" * 200_000)


def test_a_folder_or_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"not a regular file \(a folder\)"):
        read_regular_file(tmp_path, max_bytes=10)
    with pytest.raises(InputFileError, match="cannot be opened"):
        read_regular_file(tmp_path / "missing.json", max_bytes=10)


def test_a_file_at_the_cap_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1024)
    assert read_regular_file(path, max_bytes=1024) == b"x" * 1024
    with pytest.raises(InputFileError, match="larger than 1,023 bytes"):
        read_regular_file(path, max_bytes=1023)


def test_inside_resolves_symlinks_and_dot_dots(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "out").symlink_to(tmp_path)
    assert inside(project, Path("a/config.json")) == project.resolve() / "a" / "config.json"
    assert inside(project, Path("../x.json")) is None
    assert inside(project, Path("out/x.json")) is None
    assert inside(project, tmp_path / "x.json") is None
