"""Byte units, defined once: binary (KiB, MiB, GiB: what vLLM, the kernel and Cloud Run's limits count) and
decimal (GB: what datasheets and checkpoint sizes are quoted in).

Why one module: the same constant was typed seven times, as `1 << 30`, `2**30` and `1024**3`; a reader could
not tell whether two modules meant the same unit, and a GiB written as `10**9` in one of them would be a 7 %
error with no test to notice. Standard library only (nothing at all): every layer, the stack-file readers
and the program under `pulumi up` import it.
"""

from __future__ import annotations

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
MB = 10**6
GB = 10**9
