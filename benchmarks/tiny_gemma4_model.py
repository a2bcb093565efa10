"""Build a tiny, randomly initialised Gemma 4 text model for calibrating the capacity planner on CPU.

Why: the planner's hard cases are Gemma 4's (sliding-window layers, a larger head dim and fewer KV
heads on the full-attention layers, KV-shared layers). The vLLM CPU server can serve a model with the
same layer layout at toy size, and then its own start-up log says how many tokens its KV cache holds,
which docs/capacity-planning.md compares with the planner.

Run it with the Python of a vLLM environment (it needs torch and transformers >= 5.19, which the
project's own environment does not carry):

    <vllm-venv>/bin/python benchmarks/tiny_gemma4_model.py <tokenizer_dir> <out_dir>

`tokenizer_dir` is any local Hugging Face tokenizer with <bos>/<eos>/<pad> (e.g. the vLLM CPU tool's
tiny-model); its files are copied next to the weights. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

# The layout under test: 12 layers in Gemma 4's 5:1 sliding/full pattern, the last two KV-shared;
# sliding layers 4 KV heads x 32, full layers 1 KV head x 64 (attention_k_eq_v), window 128.
TEXT_CONFIG: dict[str, object] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 12,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 32,
    "global_head_dim": 64,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "num_kv_shared_layers": 2,
    "sliding_window": 128,
    "max_position_embeddings": 4096,
    "hidden_size_per_layer_input": 0,
    "final_logit_softcapping": 30.0,
    "hidden_activation": "gelu_pytorch_tanh",
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def main(tokenizer_dir: Path, out_dir: Path) -> None:
    import torch  # type: ignore[import-not-found]
    from transformers import (  # type: ignore[import-not-found]
        AutoTokenizer,
        Gemma4ForCausalLM,
        Gemma4TextConfig,
        GenerationConfig,
    )

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    special = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vocab = len(tokenizer)
    config = Gemma4TextConfig(vocab_size=vocab, vocab_size_per_layer_input=vocab, **TEXT_CONFIG, **special)
    model = Gemma4ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(**special)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy(tokenizer_dir / name, out_dir / name)
    parameters = sum(p.numel() for p in model.parameters())
    print(json.dumps({"out": str(out_dir), "parameters": parameters, "layer_types": config.layer_types}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tokenizer_dir", type=Path, help="a local Hugging Face tokenizer with <bos>/<eos>/<pad>")
    parser.add_argument("out_dir", type=Path, help="where the model's weights and tokenizer are written")
    parsed = parser.parse_args()
    main(parsed.tokenizer_dir, parsed.out_dir)
