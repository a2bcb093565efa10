"""`verify query --prompt-file` reads a regular file of bounded size, nothing else.

Red team: `--prompt-file /dev/zero` read until the machine ran out of memory, and a FIFO nobody wrote to left
the command hanging for ever. Both are refused before a byte is read, with a message naming the flag.
"""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest

from verify import UsageError
from verify.query.cli import MAX_PROMPT_BYTES, read_prompt, read_prompt_file


def _args(prompt: str | None = None, prompt_file: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(prompt=prompt, prompt_file=prompt_file)


def test_a_character_device_is_refused_before_it_is_read() -> None:
    """/dev/zero never ends: reading it filled the memory; now it is refused as not a regular file."""
    with pytest.raises(UsageError, match=r"--prompt-file '/dev/zero' is not a regular file"):
        read_prompt(_args(prompt_file=Path("/dev/zero")))


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    """Opening a FIFO blocks until a writer comes: the command hung. stat() does not block; it is refused."""
    fifo = tmp_path / "prompt.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_prompt(_args(prompt_file=fifo))


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    """A link is judged by what it points at: a harmless-looking name cannot smuggle /dev/zero in."""
    link = tmp_path / "prompt.txt"
    link.symlink_to("/dev/zero")
    with pytest.raises(UsageError, match="not a regular file"):
        read_prompt(_args(prompt_file=link))


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a regular file"):
        read_prompt(_args(prompt_file=tmp_path))


def test_an_oversize_file_is_refused_naming_the_limit(tmp_path: Path) -> None:
    """A sparse 1 GiB file costs nothing on disk but would be read whole: refused by its size."""
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(1024 * 1024 * 1024)
    with pytest.raises(UsageError, match=r"is 1024\.0 MiB, above the 4\.0 MiB a prompt may be"):
        read_prompt(_args(prompt_file=big))


def test_the_read_stops_at_the_limit_even_if_the_size_lied(tmp_path: Path) -> None:
    """The file may grow between stat() and read(): the read takes at most one byte past the limit."""
    path = tmp_path / "grows.txt"
    path.write_bytes(b"x" * 101)
    with pytest.raises(UsageError, match="above the 100 bytes"):
        read_prompt_file(path, limit=100)


def test_a_file_at_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "ok.txt"
    path.write_bytes(b"y" * 100)
    assert read_prompt_file(path, limit=100) == "y" * 100


def test_an_endless_stdin_is_cut_at_the_limit_and_refused() -> None:
    """`yes | gemma-verify query -` must not read for ever either."""

    class Endless(io.StringIO):
        def read(self, size: int | None = -1) -> str:
            assert size is not None, "stdin must be read with a bound"
            assert size > 0
            return "y" * size

    with pytest.raises(UsageError, match=r"prompt on stdin is longer than 4\.0 MiB"):
        read_prompt(_args(prompt="-"), stdin=Endless())
    assert MAX_PROMPT_BYTES == 4 * 1024 * 1024
