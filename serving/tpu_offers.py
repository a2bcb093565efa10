"""Where and on what terms Google offers TPU v6e: zones, flex-start zones, single-host slices, run limits.

Why apart from the settings: the stack schema (stacks/tpu.py) checks a stack file against these facts, and
`verify preflight` / `verify status` name the other zones to try from the same lists; a fact Google
changes is edited here once, with its source.
"""

from __future__ import annotations

from serving.accelerators import Accelerator
from serving.shapes import flex_start_zones, tpu_slices, tpu_zones

# Zones that offer TPU v6e and zones where Google lets flex-start queue for it, from the shapes table
# (serving/data/shapes.json: https://cloud.google.com/tpu/docs/regions-zones and
# https://cloud.google.com/tpu/docs/request-using-flex-start#limitations, read 2026-11). Even in a flex-start
# zone availability comes and goes: a request can wait for hours in one zone and be served at once in the
# other, so switching zones (tpu.zone) is the first thing to try when a request keeps waiting.
V6E_ZONES: tuple[str, ...] = tpu_zones(Accelerator.TPU_V6E.value)
FLEX_START_V6E_ZONES: tuple[str, ...] = flex_start_zones(Accelerator.TPU_V6E.value)

# Single-host v6e slices. For a 12B model one chip (v6e-1, tensor parallel 1) served about 3x the requests
# of a 4-chip v6e-4 in the hand-made benchmarks: 4-way sharding of a small model spends its time in
# all-reduce. Scale out with more v6e-1 nodes, not a bigger slice; v6e-4/v6e-8 are for larger models.
V6E_CHIPS: dict[str, int] = tpu_slices(Accelerator.TPU_V6E.value)

# Flex-start runs for at most 7 days (request-using-flex-start#limitations). Below 30 minutes a node
# would spend most of its run loading weights and compiling (about 10 minutes before vLLM is ready).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
FLEX_START_MIN_RUN_SECONDS = 30 * 60
