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

Why a figure is read only from a line in vLLM's own logger format, from the file that logs it
(``(EngineCore pid=N) INFO MM-DD HH:MM:SS [gpu_worker.py:760] Available KV cache memory: ...``): these
figures calibrate the planner (`verify memory --save`), and the same words anywhere else in a line (a
prompt vLLM logs, a model's output echoed, a line another process printed) forged a record that made a
stack vLLM cannot start preview as fitting. Such lines are kept apart (``unattributed``) and shown, never read.

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
# vLLM's logger prefix (vllm/logger.py): "(<process> pid=N) LEVEL MM-DD HH:MM:SS [file.py:line] ".
_VLLM_PREFIX = re.compile(
    r"^(?:\(\S+ pid=\d+\) )?(?:INFO|WARNING|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[([\w.]+\.py):\d+\] "
)
# The files vLLM 0.32.0 logs each figure from (the module docstring's sources).
_LOGGED_BY = {
    "weights": frozenset({"gpu_model_runner.py"}),
    "available_kv": frozenset({"gpu_worker.py"}),
    "cpu_kv": frozenset({"cpu_worker.py"}),
    "kv_size": frozenset({"kv_cache_utils.py"}),
    "weights_load": frozenset({"default_loader.py"}),
}
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
    # Lines holding a figure's words outside vLLM's own logger line for it: shown, never read.
    unattributed: list[str] = pydantic.Field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Enough to calibrate the planner: weights and available KV memory."""
        return self.weights_gib is not None and self.available_kv_cache_gib is not None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _logged_by(line: str) -> str | None:
    """The file vLLM's logger names at the start of ``line`` (None: not a vLLM logger line)."""
    found = _VLLM_PREFIX.match(line.strip())
    return found[1] if found else None


_PATTERNS = (
    ("weights", MODEL_LOADING),
    ("available_kv", AVAILABLE_KV),
    ("cpu_kv", CPU_KV_SPACE),
    ("kv_size", KV_SIZE),
    ("weights_load", WEIGHTS_LOAD),
)


def _take(found: dict[str, object], kind: str, match: re.Match[str]) -> None:
    if kind == "weights":
        found["weights_gib"], found["model_loading_s"] = _number(match[1]), _number(match[2])
    elif kind == "available_kv":
        found["available_kv_cache_gib"] = _number(match[1])
    elif kind == "cpu_kv":
        found.setdefault("available_kv_cache_gib", _number(match[1]))
    elif kind == "kv_size":
        found["kv_device"] = match[1]
        found["kv_cache_tokens"] = round(_number(match[2]))
        found["max_model_len"] = round(_number(match[3]))
        found["max_concurrency"] = _number(match[4])
    else:
        found["weights_loading_s"] = _number(match[1])


def parse_startup(lines: Iterable[str]) -> StartupMemory:
    """Read the memory lines of one start-up (later lines of a kind win: the newest start-up); a figure counts
    only from vLLM's own logger line for it (see the module docstring)."""
    found: dict[str, object] = {}
    kept: list[str] = []
    unattributed: list[str] = []
    for line in lines:
        hits = [(kind, match) for kind, pattern in _PATTERNS if (match := pattern.search(line))]
        if not hits:
            continue
        source = _logged_by(line)
        own = [(kind, match) for kind, match in hits if source in _LOGGED_BY[kind]]
        if not own:
            unattributed.append(line.strip())
            continue
        for kind, match in own:
            _take(found, kind, match)
        kept.append(line.strip())
    return StartupMemory.model_validate({**found, "lines": kept, "unattributed": unattributed})
