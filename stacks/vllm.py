"""vLLM serving settings as a typed model, rendered into the `vllm serve` argument list.

Why a model and a list: the hand-made deployments passed flags through `gcloud --args`, whose comma
splitting mangled JSON values such as `--speculative-config`, and they used flags vLLM had removed.
Here each setting is typed and checked against the recorded facts of the vLLM release we target, and the
arguments stay a list from the model to the container, so JSON values arrive intact.
"""

from __future__ import annotations

import json
from typing import Annotated, Self

from pydantic import AfterValidator, Field, JsonValue, model_validator

from serving.vllm_args import check_serve_args, normalise_flags
from serving.vllm_facts import vllm_facts
from stacks.base import SettingsModel
from stacks.bounds import MAX_BATCHED_TOKENS, MAX_CONTEXT_TOKENS, MAX_NUM_SEQS

# Arguments the program renders itself; a stack must set them through their typed settings instead. By vLLM's
# `dest`, so every spelling vLLM accepts is caught: `--kv-cache-dtype`, `--kv_cache_dtype`, `=value` forms and
# short aliases (`-q` for --quantization, `-tp`, `-sc`). --dtype, --quantization and --kv-cache-dtype are typed
# because the catalog checks them against the checkpoint and the accelerator (stacks/catalog_checks.py);
# through extraArgs they would reach vLLM after the typed ones (argparse keeps the last) unchecked.
MANAGED_DESTS: dict[str, str] = {
    "model": "model.path",
    "host": "(the program's 0.0.0.0)",
    "port": "the platform's port setting",
    "served_model_name": "model.servedName",
    "api_key": "the platform's API key secret",
    "speculative_config": "vllm.speculative",
    "max_model_len": "vllm.maxModelLen",
    "max_num_seqs": "vllm.maxNumSeqs",
    "tensor_parallel_size": "vllm.tensorParallelSize",
    "dtype": "vllm.dtype",
    "quantization": "vllm.quantization",
    "kv_cache_dtype": "vllm.kvCacheDtype",
    # LoRA: sized from the stack's adapters (stacks/adapters.py); the route guard comes with them.
    "enable_lora": "adapters",
    "max_loras": "lora.gpuSlots",
    "max_lora_rank": "lora.maxRank",
    "max_cpu_loras": "lora.cpuSlots",
    "lora_modules": "adapters",
    # The route guard (serving/guard_runtime.py) is vLLM's outermost middleware in its one API server process:
    # another middleware, a gRPC or headless server, more API server processes (data parallel included) or a
    # root path would put routes beside it or vLLM outside it.
    "middleware": "(the route guard, always installed)",
    "grpc": "(the route guard: vLLM serves HTTP only)",
    "grpc_port": "(the route guard: vLLM serves HTTP only)",
    "headless": "(the route guard: vLLM serves HTTP only)",
    "api_server_count": "(the route guard: one API server process)",
    "data_parallel_size": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_size_local": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_rank": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_start_rank": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_hybrid_lb": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_external_lb": "(the route guard: one API server process; scale with replicas)",
    "data_parallel_multi_port_external_lb": "(the route guard: one API server process; scale with replicas)",
    "root_path": "(the route guard matches exact paths)",
}

# Speculative methods that look their drafts up in the prompt and so need no draft model.
MODEL_FREE_SPECULATIVE_METHODS = frozenset({"ngram", "suffix"})


def _one_of(registry: str, label: str) -> AfterValidator:
    def check(value: str) -> str:
        names = vllm_facts().names(registry)
        if value not in names:
            raise ValueError(
                f"{value!r} is not a {label} that vLLM {vllm_facts().release} accepts; allowed: {', '.join(names)}"
            )
        return value

    return AfterValidator(check)


KvCacheDtype = Annotated[str, _one_of("kv_cache_dtype", "kv-cache dtype")]
ModelDtype = Annotated[str, _one_of("dtype", "dtype")]
ToolCallParser = Annotated[str, _one_of("tool_call_parser", "tool-call parser")]
ReasoningParser = Annotated[str, _one_of("reasoning_parser", "reasoning parser")]
SpeculativeMethod = Annotated[str, _one_of("speculative_config.method", "speculative method")]
# vLLM's parser takes these as free strings and refuses a wrong one only at engine start.
QuantizationMethod = Annotated[str, _one_of("quantization", "quantization method")]
LoadFormat = Annotated[str, _one_of("load_format", "load format")]


class SpeculativeDecoding(SettingsModel):
    """Speculative decoding; Gemma 4 MTP drafts with its matching `-assistant` checkpoint."""

    method: SpeculativeMethod = "mtp"
    # Path of the draft checkpoint relative to the model mount (e.g. gemma-4-12B-it-assistant).
    drafter: str | None = None
    num_speculative_tokens: int = Field(default=3, ge=1, le=16)
    # Further SpeculativeConfig keys, passed through as JSON (validated against vLLM's key list).
    extra: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _drafter_when_needed(self) -> Self:
        if self.method not in MODEL_FREE_SPECULATIVE_METHODS and not self.drafter:
            raise ValueError(
                f"vllm.speculative.drafter: method {self.method!r} needs a drafter model; Gemma 4 MTP uses the "
                "matching '-assistant' checkpoint (e.g. drafter: gemma-4-12B-it-assistant). Without it vLLM "
                "would draft with the target model itself."
            )
        known = set(vllm_facts().names("speculative_config.keys"))
        managed = {"method", "model", "num_speculative_tokens"}
        bad = sorted(key for key in self.extra if key not in known or key in managed)
        if bad:
            raise ValueError(
                f"vllm.speculative.extra: keys {bad} are not allowed (managed here or unknown to vLLM "
                f"{vllm_facts().release}); allowed: {', '.join(sorted(known - managed))}"
            )
        return self

    def config_json(self, model_root: str) -> str:
        config: dict[str, JsonValue] = {"method": self.method}
        if self.drafter:
            config["model"] = f"{model_root.rstrip('/')}/{self.drafter.strip('/')}"
        config["num_speculative_tokens"] = self.num_speculative_tokens
        config.update(self.extra)
        return json.dumps(config, separators=(",", ":"))


class VllmSettings(SettingsModel):
    """The engine settings of `vllm serve` that a stack chooses."""

    max_model_len: int = Field(ge=128, le=MAX_CONTEXT_TOKENS)
    max_num_seqs: int = Field(ge=1, le=MAX_NUM_SEQS)
    gpu_memory_utilization: float = Field(default=0.90, gt=0.0, le=1.0)
    dtype: ModelDtype = "auto"
    quantization: QuantizationMethod | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    max_num_batched_tokens: int | None = Field(default=None, ge=128, le=MAX_BATCHED_TOKENS)
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    async_scheduling: bool = False
    tensor_parallel_size: int = Field(default=1, ge=1, le=8)
    enable_auto_tool_choice: bool = False
    tool_call_parser: ToolCallParser | None = None
    reasoning_parser: ReasoningParser | None = None
    load_format: LoadFormat | None = None
    speculative: SpeculativeDecoding | None = None
    # Anything else, as `vllm serve` arguments; checked against vLLM's flags (managed flags refused).
    # vLLM accepts `--flag_name` as `--flag-name`; so do we, and the plan shows the dashed spelling.
    extra_args: Annotated[tuple[str, ...], AfterValidator(normalise_flags)] = ()

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            raise ValueError(
                "vllm.enableAutoToolChoice needs vllm.toolCallParser (vLLM answers 400 to tool_choice=auto "
                "without one); for Gemma 4 use toolCallParser: gemma4"
            )
        batched = self.max_num_batched_tokens
        if batched is not None and self.enable_chunked_prefill is False and batched < self.max_model_len:
            raise ValueError(
                f"vllm.maxNumBatchedTokens ({batched}) is below maxModelLen ({self.max_model_len}) with chunked "
                "prefill off: a full-length prompt could never be scheduled; enable chunked prefill or raise "
                "maxNumBatchedTokens"
            )
        if problem := _managed_flag_problem(self.extra_args):
            raise ValueError(problem)
        problems = check_serve_args(["model", *self.extra_args])
        if problems:
            raise ValueError("vllm.extraArgs: " + "; ".join(problems))
        return self

    def extra_arg(self, flag: str) -> str | None:
        """The value `extraArgs` gives a flag (`--flag value` or `--flag=value`), if it gives one."""
        for index, arg in enumerate(self.extra_args):
            name, equals, value = arg.partition("=")
            if name == flag:
                if equals:
                    return value
                return self.extra_args[index + 1] if index + 1 < len(self.extra_args) else None
        return None

    @property
    def batched_tokens(self) -> int | None:
        """--max-num-batched-tokens as vLLM will see it: the typed setting, or extraArgs' (the capacity
        planner counts the in-flight tokens sliding-window layers hold from it)."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        written = self.extra_arg("--max-num-batched-tokens")
        return int(written) if written is not None and written.isdigit() else None

    def serve_args(self, *, model_path: str, served_model_name: str, port: int, model_root: str) -> list[str]:
        """The full `vllm serve` argument list: model first (positional; --model is deprecated)."""
        args = [
            model_path,
            "--served-model-name",
            served_model_name,
            "--host",
            "0.0.0.0",  # noqa: S104 - inside the container; Cloud Run / the firewall guard the edge
            "--port",
            str(port),
            "--max-model-len",
            str(self.max_model_len),
            "--max-num-seqs",
            str(self.max_num_seqs),
            "--gpu-memory-utilization",
            f"{self.gpu_memory_utilization:g}",
            "--dtype",
            self.dtype,
            "--kv-cache-dtype",
            self.kv_cache_dtype,
        ]
        if self.tensor_parallel_size != 1:
            args += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.quantization:
            args += ["--quantization", self.quantization]
        if self.load_format:
            args += ["--load-format", self.load_format]
        if self.max_num_batched_tokens is not None:
            args += ["--max-num-batched-tokens", str(self.max_num_batched_tokens)]
        args += _switch("enable-chunked-prefill", self.enable_chunked_prefill)
        args += _switch("enable-prefix-caching", self.enable_prefix_caching)
        if self.async_scheduling:
            args.append("--async-scheduling")
        if self.enable_auto_tool_choice:
            args.append("--enable-auto-tool-choice")
        if self.tool_call_parser:
            args += ["--tool-call-parser", self.tool_call_parser]
        if self.reasoning_parser:
            args += ["--reasoning-parser", self.reasoning_parser]
        if self.speculative is not None:
            args += ["--speculative-config", self.speculative.config_json(model_root)]
        args += list(self.extra_args)
        return args


def _managed_flag_problem(extra_args: tuple[str, ...]) -> str | None:
    """extraArgs setting a flag the program renders from a typed, checked setting, with that setting's key."""
    facts = vllm_facts()
    found: dict[str, str] = {}
    for arg in extra_args:
        name = arg.partition("=")[0]
        if not name.startswith("-"):
            continue
        fact = facts.flag(name)
        dest = fact.dest if fact is not None else ("model" if name == "--model" else None)
        if dest in MANAGED_DESTS:
            found[name] = MANAGED_DESTS[dest]
    if not found:
        return None
    where = ", ".join(f"{flag} -> {key}" for flag, key in found.items())
    return (
        f"vllm.extraArgs sets {sorted(found)}, which the program renders from typed settings (checked against the "
        f"checkpoint and the accelerator); set them there instead: {where}"
    )


def _switch(name: str, value: bool | None) -> list[str]:
    """vLLM's paired boolean flags: unset leaves vLLM's own default."""
    if value is None:
        return []
    return [f"--{name}" if value else f"--no-{name}"]
