"""What `gke.cluster.systemMachineType` may name: a predefined Compute Engine machine type of a CPU family.

Why: the system pool's machine type went to the node pool unchecked, so `"e2-micro; rm -rf /"` previewed and
failed only at `pulumi up` (issue 46). The accelerator shapes table (serving/data/shapes.json) holds the GPU
and TPU machine types; the system pool runs none of them (kube-dns, the metrics adapter, Managed Prometheus's
collectors), so its name is checked against the predefined types' naming of the x86 general-purpose and
compute-optimized families instead: `<family>-<standard|highmem|highcpu>-<vCPUs>` (C3/C3D/C4/C4D with local
SSD add `-lssd`) and E2's shared-core `e2-micro`, `e2-small`, `e2-medium`. Arm families (T2A, C4A) are left
out: the system images were not checked for Arm builds.

Source: cloud.google.com/compute/docs/general-purpose-machines and .../compute-optimized-machines (machine
type names by series), as the project's notes read them on 2026-12-02 (not re-read offline). A real type
this pattern admits may still be unoffered in the stack's zones; `pulumi up` says so, and the plan's price
says when it has no rate for it (serving/data/pricing.json).
"""

from __future__ import annotations

import re
from typing import Final

FAMILIES: Final = ("e2", "n1", "n2", "n2d", "n4", "n4d", "c2", "c2d", "c3", "c3d", "c4", "c4d", "t2d")
SHARED_CORE: Final = ("e2-micro", "e2-small", "e2-medium")
SHAPES: Final = ("standard", "highmem", "highcpu")
_PREDEFINED = re.compile(
    rf"^(?:{'|'.join(FAMILIES)})-(?:{'|'.join(SHAPES)})-(?:[1-9][0-9]{{0,2}})(?:-lssd)?$",
)


def system_machine_problem(value: str) -> str | None:
    """Why `value` is not a CPU machine type the system pool may run, and what is allowed (the settings' error
    names the key)."""
    if value in SHARED_CORE or _PREDEFINED.match(value):
        return None
    return (
        f"{value[:80]!r} is not a predefined Compute Engine machine type of a CPU family; allowed: "
        f"<family>-<{'|'.join(SHAPES)}>-<vCPUs> (optionally -lssd) with family one of {', '.join(FAMILIES)}, "
        f"or {', '.join(SHARED_CORE)} (e.g. e2-standard-4, the default)"
    )
