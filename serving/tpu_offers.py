"""Where and on what terms Google offers TPU v6e: zones, flex-start zones, single-host slices, run limits.

Why apart from the settings: the stack schema (stacks/tpu.py) checks a stack file against these facts, and
`verify preflight` / `verify status` name the other zones to try from the same lists; a fact Google
changes is edited here once, with its source.
"""

from __future__ import annotations

# Zones that offer TPU v6e, from Google's "TPU regions and zones" page
# (https://cloud.google.com/tpu/docs/regions-zones, v6e rows, read 2026-11).
V6E_ZONES: tuple[str, ...] = (
    "us-central1-b",
    "us-east1-d",
    "us-east5-a",
    "us-east5-b",
    "europe-west4-a",
    "asia-northeast1-b",
)

# Zones where Google lets flex-start queue for v6e: "You can only request Flex-start TPU v6e ... in the
# specified zones" (https://cloud.google.com/tpu/docs/request-using-flex-start#limitations, read 2026-11).
# Even there availability comes and goes: a request can wait for hours in one zone and be served at once in
# the other, so switching zones (tpu.zone) is the first thing to try when a request keeps waiting.
FLEX_START_V6E_ZONES: tuple[str, ...] = ("us-east5-a", "asia-northeast1-b")

# Single-host v6e slices. For a 12B model one chip (v6e-1, tensor parallel 1) served about 3x the requests
# of a 4-chip v6e-4 in the hand-made benchmarks: 4-way sharding of a small model spends its time in
# all-reduce. Scale out with more v6e-1 nodes, not a bigger slice; v6e-4/v6e-8 are for larger models.
V6E_CHIPS: dict[str, int] = {"v6e-1": 1, "v6e-4": 4, "v6e-8": 8}

# Flex-start runs for at most 7 days (request-using-flex-start#limitations). Below 30 minutes a node
# would spend most of its run loading weights and compiling (about 10 minutes before vLLM is ready).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
FLEX_START_MIN_RUN_SECONDS = 30 * 60
