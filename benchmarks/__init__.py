"""Scripts that measure the measuring tools; run from the repository root as ``python -m benchmarks.<name>``.

Why a package: the scripts import ``verify``, which is importable from the repository root; run as a
module they need no ``PYTHONPATH`` and no install.
"""
