"""Build a tiny LoRA adapter for the live tests' tiny model with PEFT, in the vLLM environment.

Usage (the vLLM environment's Python, which has torch, transformers and peft):
    python make_tiny_adapter.py MODEL_DIR OUT_DIR --rank 8 [--seed 1] [--base NAME] [--cut-rows N]

Why PEFT and random weights: the adapter must be exactly what fine-tuning tools write (adapter_config.json
and adapter_model.safetensors in PEFT's layout), built offline. The weights are random and scaled up so the
adapter's answers differ from the base's at temperature 0; `--base` writes another base_model_name_or_path
(a mismatched adapter, which vLLM's resolver refuses); `--cut-rows N` keeps only N rows of layer 0's
q_proj lora_B (a wrong-shaped adapter: 96 rows for the tiny model's 128-wide projection).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SCALE = 20.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--base", default=None, help="base_model_name_or_path to record (default: model_dir)")
    parser.add_argument("--cut-rows", type=int, default=None, help="rows of layer 0's q_proj lora_B to keep")
    args = parser.parse_args()
    # Imported once the arguments are read, so `--help` answers without the vLLM environment's packages.
    import torch  # type: ignore[import-not-found]
    from peft import LoraConfig, get_peft_model  # type: ignore[import-not-found]
    from transformers import AutoModelForCausalLM  # type: ignore[import-not-found]

    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    config = LoraConfig(
        r=args.rank,
        lora_alpha=2 * args.rank,
        target_modules=["q_proj", "v_proj"],
        lora_dropout=0.0,
        init_lora_weights=False,
    )
    adapted = get_peft_model(model, config)
    with torch.no_grad():
        for name, parameter in adapted.named_parameters():
            if "lora_" in name:
                parameter.mul_(SCALE)
    adapted.save_pretrained(args.out_dir)
    if args.cut_rows is not None:
        from safetensors.torch import load_file, save_file  # type: ignore[import-not-found]

        weights_path = args.out_dir / "adapter_model.safetensors"
        tensors = load_file(str(weights_path))
        key = next(k for k in tensors if "layers.0.self_attn.q_proj.lora_B" in k)
        tensors[key] = tensors[key][: args.cut_rows].contiguous()
        save_file(tensors, str(weights_path), metadata={"format": "pt"})
    config_path = args.out_dir / "adapter_config.json"
    written = json.loads(config_path.read_text())
    written["base_model_name_or_path"] = args.base or str(args.model_dir)
    config_path.write_text(json.dumps(written, indent=2))


if __name__ == "__main__":
    main()
