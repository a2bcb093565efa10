"""Where a sweep writes, checked before anything is measured.

Why up front: a sweep can run for hours, and an ``--output`` that cannot be written (a read-only file
system, ``/proc``, a path under a regular file, a directory, another program's binary file) used to
be found only when the first cell was appended, losing that measurement, or as a traceback. Each
problem is a ``UsageError`` (exit 2) naming ``--output`` and what is wrong.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from verify import UsageError

# The reports written beside the results file (``<stem>.csv`` ...), see verify/bench/report.py.
REPORT_SUFFIXES = (".csv", ".md", ".png", ".metrics.json")


def check_output(path: Path) -> None:
    """Raise ``UsageError`` unless ``path`` and the reports beside it can be written and read back."""
    targets = [path, *(path.with_suffix(suffix) for suffix in REPORT_SUFFIXES)]
    for target in targets:
        if target.exists() and not target.is_file():
            kind = "a directory" if target.is_dir() else "not a regular file"
            raise UsageError(f"--output {path}: {target} is {kind}; name a results file such as run.jsonl")
    blocking = next((parent for parent in reversed(path.parents) if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise UsageError(f"--output {path}: {blocking} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--output {path}: cannot create the directory {path.parent} ({_reason(exc)})") from None
    try:
        # A file created and removed proves the directory takes new files (the reports, a new results file).
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".verify-bench-", suffix=".probe"):
            pass
        for target in targets:
            if target.exists():
                with target.open("ab"):
                    pass  # opened for appending and closed: nothing written, the permission proven
        if path.exists():
            path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"--output {path} is not a results file of verify bench (not UTF-8 text); choose another --output"
        ) from None
    except OSError as exc:
        raise UsageError(f"--output {path} cannot be written or read back ({_reason(exc)})") from None


def _reason(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or type(exc).__name__}{where}"
