"""`vllm.quantization` must agree with how the checkpoint is stored.

Why: vLLM reads a quantized checkpoint's method from its config.json (`quantization_config.quant_method`)
and refuses to start when `--quantization` names another ("Quantization method specified in the model
config (...) does not match the quantization method specified in the `quantization` argument", vLLM
0.32 `ModelConfig._verify_quantization`). On an unquantized checkpoint only the online methods work,
which quantize bf16 weights while loading; a checkpoint format (compressed-tensors, gptq, awq...) finds
nothing to read. The built-in model profiles know each checkpoint's format, so the mismatch is caught
at preview time instead of in a crash loop.
"""

from __future__ import annotations

from serving.model_profiles import builtin_profile_files

# vLLM 0.32's online quantization: `fp8` quantizes bf16 weights dynamically, `online` and its shorthands
# ("online quant shorthand names", vllm/model_executor/layers/quantization/__init__.py) and
# `experts_int8` need no quantized checkpoint.
ONLINE_METHODS = frozenset(
    {
        "fp8",
        "online",
        "fp8_per_tensor",
        "fp8_per_block",
        "fp8_per_channel",
        "int8_per_channel_weight_only",
        "nvfp4_per_token",
        "mxfp8",
        "experts_int8",
    }
)
# Methods vLLM accepts for a checkpoint stored as another: its faster kernels for the same format
# (the `overrides` of ModelConfig._verify_quantization, vLLM 0.32).
_SAME_FORMAT = {
    "gptq": ("gptq", "gptq_marlin", "auto_gptq"),
    "awq": ("awq", "awq_marlin", "auto_awq"),
}


def checkpoint_quant_method(model_path: str) -> tuple[bool, str | None]:
    """(known, quant_method) of the built-in profile whose name ends `model_path`; (False, None) if none."""
    leaf = model_path.rstrip("/").rsplit("/", 1)[-1].lower()
    for name, profile in builtin_profile_files().items():
        if name.lower() == leaf:
            block = profile.config.get("quantization_config")
            method = block.get("quant_method") if isinstance(block, dict) else None
            return True, str(method) if method else None
    return False, None


def quantization_problem(model_path: str, quantization: str | None) -> str | None:
    """Why `vllm.quantization` contradicts the checkpoint at `model.path`, or None."""
    if quantization is None:
        return None
    known, stored = checkpoint_quant_method(model_path)
    if not known:
        return None
    if stored is None:
        if quantization in ONLINE_METHODS:
            return None
        return (
            f"vllm.quantization: {quantization!r} reads a checkpoint stored in that format, but {model_path} is "
            f"unquantized; allowed: unset, or an online method ({', '.join(sorted(ONLINE_METHODS))})"
        )
    allowed = _SAME_FORMAT.get(stored, (stored,))
    if quantization in allowed:
        return None
    return (
        f"vllm.quantization: {quantization!r} contradicts {model_path}, which is stored as {stored} (vLLM refuses "
        f"to start); allowed: {', '.join(allowed)} (or unset: vLLM reads it from the checkpoint)"
    )
