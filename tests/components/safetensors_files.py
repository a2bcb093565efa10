"""Safetensors files built by hand for the tests: the format's 8-byte length, its JSON header, zeroed data.

Why by hand: the import job reads the header with the standard library (job_scripts/import_weights.py), so
the tests build exactly the bytes the format defines (github.com/huggingface/safetensors, README "Format"),
without torch or the safetensors package in the project's environment.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from serving.lora_shapes import LayerShapes

BYTES = {"F32": 4, "BF16": 2, "F16": 2}


def safetensors_bytes(tensors: Mapping[str, tuple[int, ...]], dtype: str = "BF16") -> bytes:
    """A valid safetensors file holding `tensors` (name -> shape), every value zero."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors.items():
        size = BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + b"\x00" * offset


def lora_tensors(
    shapes: LayerShapes, rank: int, modules: Iterable[str], *, prefix: str = "base_model.model.model.layers"
) -> dict[str, tuple[int, int]]:
    """PEFT's tensors for `modules` of every layer, shaped as the model's modules are (A [r, in], B [out, r])."""
    tensors: dict[str, tuple[int, int]] = {}
    for layer in range(len(shapes.layer_kinds)):
        for module in modules:
            features = shapes.modules_of(layer).get(module)
            if features is None:
                continue
            block = "mlp" if module in {"gate_proj", "up_proj", "down_proj"} else "self_attn"
            tensors[f"{prefix}.{layer}.{block}.{module}.lora_A.weight"] = (rank, features[0])
            tensors[f"{prefix}.{layer}.{block}.{module}.lora_B.weight"] = (features[1], rank)
    return tensors
