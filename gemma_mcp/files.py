"""Every file the server reads for an agent: inside its folder, reached without a symbolic link.

Why: a branch can carry a symlink (`bench-results/mcp/x.md -> /proc/self/environ`, or to an ADC file with a
refresh token and client secret). Reading through it would hand the agent the server's environment or
credentials. So a path is refused when any part of it below the folder is a symlink, or when it resolves
outside the folder; the file itself must be a regular file.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutsideError(ValueError):
    """The path leaves its folder or passes through a symlink (the message says which)."""


def inside(folder: Path, path: Path) -> Path:
    """`path` (absolute, or relative to `folder`) once checked, under the resolved folder; OutsideError if not."""
    base = folder.resolve()
    given = Path(os.path.normpath(path if path.is_absolute() else folder / path))
    for root in (Path(os.path.normpath(folder.absolute())), base):
        if given.is_relative_to(root):
            relative = given.relative_to(root)
            break
    else:
        raise OutsideError(f"{path} is outside {folder.name}/")
    current = base
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise OutsideError(f"{path} is or passes through a symbolic link; refused")
    if current.exists() and not current.is_file():
        raise OutsideError(f"{path} is not a regular file")
    return current


def read_text_inside(folder: Path, path: Path) -> str:
    return inside(folder, path).read_text(encoding="utf-8")


def read_bytes_inside(folder: Path, path: Path) -> bytes:
    return inside(folder, path).read_bytes()
