"""The program's side of the stack-output contract (serving.outputs): every output, under its name.

Why a check here too: the contract's reader (verify) learns of a missing output only after a rollout;
building the exports through the platform's model makes a missing or misspelt output fail the program,
in every preview and test, before anything is deployed.
"""

from __future__ import annotations

from typing import Any

import pulumi

from serving.outputs import CloudRunOutputs, GkeOutputs, TpuOutputs
from stacks.settings import StackSettings

# Output name (camelCase) -> value; values are Pulumi inputs until the engine resolves them.
ExportedOutputs = dict[str, pulumi.Input[Any]]


def exported(
    model: type[CloudRunOutputs] | type[TpuOutputs] | type[GkeOutputs], **values: pulumi.Input[Any]
) -> ExportedOutputs:
    """The exports of one platform: every field of `model` (defaults such as `platform` filled in)."""
    fields = model.model_fields
    unknown = sorted(set(values) - set(fields))
    missing = sorted(name for name, field in fields.items() if name not in values and field.is_required())
    if unknown or missing:
        raise TypeError(f"{model.__name__} outputs: unknown {unknown}, missing {missing} (serving/outputs.py)")
    # An optional output with nothing to say (e.g. no bench job) is left out, as the program always has.
    return {
        str(field.alias): values[name] if name in values else field.get_default()
        for name, field in fields.items()
        if not (field.default is None and values.get(name) is None)
    }


def settings_outputs(settings: StackSettings) -> dict[str, Any]:
    """The outputs every platform takes straight from the settings (the limits vLLM starts with, its args)."""
    return {
        "served_model_name": settings.model.served_name,
        "accelerator": settings.accelerator,
        "region": settings.region,
        "max_model_len": settings.vllm.max_model_len,
        "max_num_seqs": settings.vllm.max_num_seqs,
        "vllm_args": settings.serve_args(),
        # What is billed (GPU, CPU, memory, zonal redundancy / chips, tier): the plan and verify bench price it.
        "billing": settings.billing().model_dump(by_alias=True, mode="json"),
    }
