"""On what terms Google runs a TPU VM node: the flex-start run limits.

Why apart from the settings: the stack schema (stacks/tpu.py) checks a stack file against these limits and
`verify preflight` names them too. Where each TPU generation is offered (its zones, its flex-start zones, its
single-host slices) is data in the shapes table (serving/data/shapes.json), read through serving/shapes.py
(`tpu_zones`, `flex_start_zones`, `tier_zones`, `tpu_slices`) for the stack's own generation. Even in a
flex-start zone availability comes and goes: a request can wait for hours in one zone and be served at once in
another, so switching zones (tpu.zone) is the first thing to try when a request keeps waiting. For a small
model one chip (tensor parallel 1) served about 3x the requests of a 4-chip slice in the hand-made benchmarks:
scale out with more single-chip nodes, not a bigger slice.
"""

from __future__ import annotations

# Flex-start runs for at most 7 days (https://cloud.google.com/tpu/docs/request-using-flex-start#limitations).
# Below 30 minutes a node would spend most of its run loading weights and compiling (about 10 minutes before
# vLLM is ready).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
FLEX_START_MIN_RUN_SECONDS = 30 * 60
