"""How the project reads a file someone names (a stack file, a policy config, a checkpoint's config.json):
as a regular file under a size cap, its JSON nested no deeper than a bound.

Why one reader: a path on the command line or in a stack file can name `/dev/zero` (a read that never ends),
a FIFO (an open that waits for a writer forever), a 3 GB file (MemoryError) or a document of 200,000 nested
arrays (RecursionError in `json`); each ended in a hang or a traceback. Here each ends in one `InputFileError`
that names the file and what is allowed, and the callers word it with their key or flag.

Standard library only (and `serving.units`, plain constants): the settings, the preview, the program under
`pulumi up` and verify all read through it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from serving.units import KIB, MIB

# A stack file, Pulumi.yaml or a policy config is a few KiB (the largest shipped stack file is under 5 KiB);
# 1 MiB leaves room for long comments and still reads in a moment.
CONFIG_FILE_MAX_BYTES = 1 * MIB
# A checkpoint's config.json is a few KiB (Gemma 4 31B's about 5 KiB); its model.safetensors.index.json lists
# every tensor (a few hundred KiB for a 31B, some MiB for the largest open checkpoints).
CHECKPOINT_CONFIG_MAX_BYTES = 1 * MIB
CHECKPOINT_INDEX_MAX_BYTES = 64 * MIB
# The deepest nesting of arrays and objects read: a stack's blocks nest 4 or 5 deep, a checkpoint's config.json
# 3 or 4 (per_layer_config), a policy config 2. Python's json and PyYAML recurse once per level.
MAX_NESTING = 64

# What Python says of an integer too long to convert (sys.get_int_max_str_digits()), said for a reader.
TOO_MANY_DIGITS = f"an integer of more than {sys.get_int_max_str_digits():,} digits, more than any value read here"

# Characters that open or close a JSON container or a string; everything else is skipped in one step.
_JSON_STRUCTURE = re.compile(r'["\\\[\]{}]')


class InputFileError(ValueError):
    """A named file that is not one to read (not a regular file, too large, nested too deep, not JSON)."""


def read_regular_file(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of ``path``, a regular file (after symlinks) of at most ``max_bytes``.

    Opened without blocking, so a FIFO is refused instead of waiting for a writer; a device, a folder or a
    socket is refused by its type before a byte is read; the read stops one byte past the cap.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InputFileError(f"{path}: cannot be opened ({error.strerror or error})") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{path}: not a regular file ({_kind_of(mode)}); name a file")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(descriptor, min(left, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise InputFileError(f"{path}: cannot be read ({error.strerror or error})") from None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise InputFileError(f"{path}: larger than {_size(max_bytes)}, the most read from such a file")
    return data


def read_text_file(path: Path, *, max_bytes: int) -> str:
    """``read_regular_file`` decoded as UTF-8 (the encoding of every file the project reads)."""
    try:
        return read_regular_file(path, max_bytes=max_bytes).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(f"{path}: not UTF-8 text (byte {error.start})") from None


def json_nesting(text: str) -> int:
    """How deep arrays and objects nest in a JSON text (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for found in _JSON_STRUCTURE.finditer(text):
        char = found.group()
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                # It escapes the next character; only a quote or a backslash there is one this loop would see.
                escaped = text[found.end() : found.end() + 1] in {'"', "\\"}
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads_json(text: str, *, max_nesting: int = MAX_NESTING) -> Any:  # noqa: ANN401 - any JSON value
    """A JSON text as Python values; InputFileError when it nests deeper than ``max_nesting`` or does not parse
    (which includes an integer of more digits than Python converts, and the non-JSON NaN and Infinity)."""
    nesting = json_nesting(text)
    if nesting > max_nesting:
        raise InputFileError(f"nested {nesting} levels deep; at most {max_nesting} are read")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise InputFileError(f"not valid JSON ({error})") from None
    except ValueError as error:  # NaN or Infinity (_refuse_constant), or the int-digits limit
        problem = str(error) if "JSON number" in str(error) else TOO_MANY_DIGITS
        raise InputFileError(f"not valid JSON ({problem})") from None


def read_json_file(path: Path, *, max_bytes: int, max_nesting: int = MAX_NESTING) -> Any:  # noqa: ANN401 - JSON
    """A JSON file read as above; every error names the file."""
    text = read_text_file(path, max_bytes=max_bytes)
    try:
        return loads_json(text, max_nesting=max_nesting)
    except InputFileError as error:
        raise InputFileError(f"{path}: {error}") from None


def inside(root: Path, path: Path) -> Path | None:
    """``path`` (relative to ``root`` unless absolute) with symlinks resolved, if it lies in ``root``; else None."""
    candidate = path if path.is_absolute() else root / path
    resolved = candidate.resolve()
    return resolved if resolved.is_relative_to(root.resolve()) else None


def _refuse_constant(name: str) -> Any:  # noqa: ANN401 - json's parse_constant hook
    raise ValueError(f"{name} is not a JSON number")


def _kind_of(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _size(count: int) -> str:
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if count % unit == 0:
            return f"{count // unit} {name}"
    return f"{count:,} bytes"
