"""vLLM's start-up lines about memory, parsed: weights, available KV memory, KV tokens, concurrency.

The formats are vLLM 0.32.0's own logger calls:
- ``Model loading took %s GiB memory and %.6f seconds`` (vllm/v1/worker/gpu_model_runner.py; GPU workers);
- ``Available KV cache memory: %s GiB`` (vllm/v1/worker/gpu_worker.py; GPU workers);
- ``Explicitly set (%s/%s) GiB for KV cache on node %d`` (the CPU worker's equivalent, recorded from a
  real CPU server; its first figure is VLLM_CPU_KVCACHE_SPACE);
- ``%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx``
  (vllm/v1/core/kv_cache_utils.py; device GPU, CPU or TPU; thousands separated by commas);
- ``Loading weights took %.2f seconds`` (vllm/model_executor/model_loader/default_loader.py).
GiB figures are rounded to two decimals by vLLM (``format_gib``).

The TPU backend (tpu-inference) logs the KV size line through vLLM's own code but its own memory lines in
other words: on TPU only the KV tokens and concurrency are read; weights and KV memory are reported as
not logged (unconfirmed: no tpu-inference log was available to record).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pydantic

_FLOAT = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
MODEL_LOADING = re.compile(rf"Model loading took {_FLOAT} GiB memory and {_FLOAT} seconds")
AVAILABLE_KV = re.compile(rf"Available KV cache memory: {_FLOAT} GiB")
CPU_KV_SPACE = re.compile(rf"Explicitly set \({_FLOAT}/{_FLOAT}\) GiB for KV cache")
KV_SIZE = re.compile(
    rf"(\w+(?: \+ host)?) KV cache size: {_FLOAT} tokens, Maximum concurrency for {_FLOAT} tokens per request: "
    rf"{_FLOAT}x"
)
WEIGHTS_LOAD = re.compile(rf"Loading weights took {_FLOAT} seconds")
# What a log query must find (Cloud Logging's `:` is a substring match on the text).
SEARCH_TERMS = (
    "Model loading took",
    "Available KV cache memory",
    "GiB for KV cache",
    "KV cache size:",
    "Loading weights took",
)


class StartupMemory(pydantic.BaseModel):
    """What one start-up logged; None where the line was not found."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    weights_gib: float | None = None
    model_loading_s: float | None = None
    weights_loading_s: float | None = None
    available_kv_cache_gib: float | None = None
    kv_device: str | None = None
    kv_cache_tokens: int | None = None
    max_model_len: int | None = None
    max_concurrency: float | None = None
    lines: list[str] = pydantic.Field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Enough to calibrate the planner: weights and available KV memory."""
        return self.weights_gib is not None and self.available_kv_cache_gib is not None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_startup(lines: Iterable[str]) -> StartupMemory:
    """Read the memory lines of one start-up (later lines of a kind win: the newest start-up)."""
    found: dict[str, object] = {}
    kept: list[str] = []
    for line in lines:
        matched = False
        if match := MODEL_LOADING.search(line):
            found["weights_gib"], found["model_loading_s"] = _number(match[1]), _number(match[2])
            matched = True
        if match := AVAILABLE_KV.search(line):
            found["available_kv_cache_gib"] = _number(match[1])
            matched = True
        if (match := CPU_KV_SPACE.search(line)) and "available_kv_cache_gib" not in found:
            found["available_kv_cache_gib"] = _number(match[1])
            matched = True
        if match := KV_SIZE.search(line):
            found["kv_device"] = match[1]
            found["kv_cache_tokens"] = round(_number(match[2]))
            found["max_model_len"] = round(_number(match[3]))
            found["max_concurrency"] = _number(match[4])
            matched = True
        if match := WEIGHTS_LOAD.search(line):
            found["weights_loading_s"] = _number(match[1])
            matched = True
        if matched:
            kept.append(line.strip())
    return StartupMemory.model_validate({**found, "lines": kept})
