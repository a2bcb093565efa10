"""The settings union: the stack's `accelerator` picks its platform's model, and messages stay the old ones.

Why: the union is the one place that decides which platform a stack is; a wrong or missing discriminator,
or the other platform's block, must still read as a sentence about the stack file, not as pydantic's
union internals (tags, variant names).
"""

from __future__ import annotations

import json

import pytest

from serving.shapes import Accelerator
from stacks.apis import BASE_APIS, TPU_APIS
from stacks.loading import StackConfigError, settings_from_config
from stacks.monitoring import MONITORING_API
from stacks.settings import CloudRunStack, TpuStack
from tests.conftest import stack_config


def problems(stack: str, edits: dict[str, object], drop: tuple[str, ...] = ()) -> str:
    config = dict(stack_config(stack).values)
    config.update(
        {
            f"gemma-serving:{key}": json.dumps(value) if not isinstance(value, str) else value
            for key, value in edits.items()
        }
    )
    for key in drop:
        config.pop(f"gemma-serving:{key}")
    with pytest.raises(StackConfigError) as caught:
        settings_from_config(config)
    return str(caught.value)


def test_unknown_accelerator_lists_the_allowed_ones() -> None:
    """A typo in `accelerator` names the key and the values (the shapes table's accelerators), not the union's
    tag machinery."""
    message = problems("l4", {"accelerator": "nvidia-t4"})
    allowed = [f"'{accelerator}'" for accelerator in Accelerator.every()]
    assert allowed[:2] == ["'nvidia-l4'", "'nvidia-rtx-pro-6000'"]
    assert message == f"gemma-serving:accelerator: Input should be {', '.join(allowed[:-1])} or {allowed[-1]}"


def test_missing_accelerator_is_named() -> None:
    """Without `accelerator` no platform can be chosen: say which key is missing."""
    assert problems("l4", {}, drop=("accelerator",)) == "gemma-serving:accelerator: required but not set"


@pytest.mark.parametrize(
    ("stack", "edits", "drop", "expected"),
    [
        (
            "l4",
            {"accelerator": "tpu-v6e"},
            (),
            "cloudRun: a TPU stack does not run on Cloud Run; remove the cloudRun block",
        ),
        ("l4", {"tpu": {"zone": "us-east5-a"}}, (), "tpu: only a tpu-v6e stack takes a tpu block; remove it"),
        ("l4", {}, ("cloudRun",), "cloudRun: a NVIDIA L4 stack needs a cloudRun block (cpu, memoryGib, ...)"),
        ("tpu-v6e", {}, ("tpu",), "tpu: a tpu-v6e stack needs a tpu block (at least tpu.zone, e.g. us-east5-a)"),
    ],
)
def test_the_other_platforms_block_gets_a_sentence(
    stack: str, edits: dict[str, object], drop: tuple[str, ...], expected: str
) -> None:
    """A block of the other platform (or a missing own block) says what to do, without a variant's name."""
    message = problems(stack, edits, drop)
    assert message == f"gemma-serving:{expected}"


def test_each_variant_owns_what_differs_by_platform() -> None:
    """Port, model root, APIs and the import job's image come from the variant, so no caller branches."""
    gpu = settings_from_config(stack_config("l4").values)
    tpu = settings_from_config(stack_config("tpu-v6e").values)
    assert isinstance(gpu, CloudRunStack)
    assert isinstance(tpu, TpuStack)
    assert (gpu.port, gpu.model_root) == (gpu.cloud_run.port, gpu.cloud_run.mount.mount_path)
    assert set(gpu.apis) == {*BASE_APIS, MONITORING_API}
    assert (tpu.port, tpu.model_root) == (tpu.tpu.port, "/mnt/models")
    assert set(tpu.apis) == {*BASE_APIS, *TPU_APIS, MONITORING_API}
    assert gpu.import_image == gpu.image_ref
    assert tpu.import_image.startswith("vllm/vllm-openai:")
    assert "--tensor-parallel-size" in tpu.serve_args()
    assert (gpu.PLATFORM, tpu.PLATFORM) == ("cloud-run", "tpu")
