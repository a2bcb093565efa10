"""Build a tiny, randomly initialised decoder-only model and a locally trained tokenizer, for the
real vLLM CPU server the live tests start (tests/live/server.py). Run it with the vLLM environment's
Python (it needs torch, transformers and tokenizers, which the project's own environment does not carry).

Nothing is downloaded: the tokenizer is trained (byte-level BPE) on Python's own standard-library
sources, the weights are random with a fixed seed. The model answers gibberish; its timings, shapes,
errors and metrics are vLLM's own. Gemma-style chat template (a system turn kept as its own turn).

Usage: ``<vllm-venv>/bin/python tests/live/make_tiny_model.py OUT_DIR``
"""

from __future__ import annotations

import argparse
import json
import sysconfig
from pathlib import Path
from typing import Any

VOCAB_SIZE = 4096
MAX_POSITIONS = 2048
SPECIAL = ["<pad>", "<bos>", "<eos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
    "{% else %}{% set role = message['role'] %}{% endif %}"
    "<start_of_turn>{{ role }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] is not none %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def corpus_files(limit: int = 400) -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(str(path) for path in stdlib.glob("*.py"))[:limit]


def build_tokenizer() -> Any:
    from tokenizers import (  # type: ignore[import-not-found]
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast  # type: ignore[import-not-found]

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train(corpus_files(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<start_of_turn>", "<end_of_turn>"],
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer: Any) -> Any:
    import torch  # type: ignore[import-not-found]
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,  # head_dim 32: a size the vLLM CPU attention backend supports
        num_key_value_heads=2,
        max_position_embeddings=MAX_POSITIONS,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=[tokenizer.eos_token_id, end_of_turn],
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=[tokenizer.eos_token_id, end_of_turn],
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out, safe_serialization=True)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    print(json.dumps({"out": str(out), "parameters": parameters, "vocab": len(tokenizer)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="where the model and its tokenizer are written")
    main(parser.parse_args().out_dir)
