"""The version ``gemma-verify --version`` prints, so a CI log says which verify judged a rollout.

Why pyproject.toml first: in a clone (how verify runs, installed editable by ``make venv``) it is the
source of truth even when the installed metadata is older; the metadata covers a built install.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

DISTRIBUTION = "gemma-serving"
_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def project_version() -> str:
    try:
        version = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        version = None
    if isinstance(version, str):
        return version
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
