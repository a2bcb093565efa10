"""A stack names a catalog checkpoint by id, variant and revision; every mistake of the old long form is refused."""

from __future__ import annotations

import pytest

from stacks.capacity import assess_stack
from stacks.loading import settings_from_config
from stacks.settings import TpuStack
from tests.stacks.test_settings import config_with, problems_of

# A commit-shaped id that no catalog repo pins (a placeholder-looking one is refused: stacks/revisions.py).
REV = "9f3c2a71b4e85d06c1a7f29e3b58d4c60e17a2b9"
P = "gemma-serving:"


def short(model_id: str, variant: str, **extra: str) -> dict[str, str]:
    return {"id": model_id, "variant": variant, "revision": REV, **extra}


def test_short_form_fills_path_source_quantization_and_dtype() -> None:
    """The shipped l4 stack no longer spells out its repo, --quantization or --dtype: the catalog decides them."""
    settings = settings_from_config(config_with("l4"))
    assert settings.model.path == "gemma-4-12B-it-qat-w4a16-ct"
    assert settings.model.served_name == "gemma-4-12b-it"
    assert settings.model.source is not None
    assert settings.model.source.uri == "hf://google/gemma-4-12B-it-qat-w4a16-ct"
    assert settings.vllm.quantization == "compressed-tensors"
    assert settings.vllm.dtype == "bfloat16"


def test_short_form_pairs_the_variants_mtp_drafter() -> None:
    """rtx6000: MTP with the catalog's -assistant drafter, imported at its pinned commit; 3 tokens stay as written."""
    settings = settings_from_config(config_with("rtx6000"))
    assert settings.vllm.speculative is not None
    assert settings.vllm.speculative.drafter == "gemma-4-12B-it-assistant"
    assert settings.vllm.speculative.num_speculative_tokens == 3
    assert settings.model.drafter_source is not None
    assert settings.model.drafter_source.uri == "hf://google/gemma-4-12B-it-assistant"


def test_upstream_speculative_tokens_when_unset() -> None:
    """Without numSpeculativeTokens the recipe's recommendation applies (4 for the 26B-A4B)."""
    values = config_with(
        "rtx6000",
        model=short("gemma-4-26b-a4b-it", "nvfp4", drafterRevision=REV),
        vllm__speculative={"method": "mtp"},
    )
    settings = settings_from_config(values)
    assert settings.vllm.speculative is not None
    assert settings.vllm.speculative.drafter == "gemma-4-26B-A4B-it-assistant"
    assert settings.vllm.speculative.num_speculative_tokens == 4
    assert settings.vllm.kv_cache_dtype == "fp8"  # from the variant's own arguments; the stack file says fp8 too


def test_tpu_tensor_parallel_follows_the_slice() -> None:
    """31B on v6e-8: tensor parallel 8 without being told (a v6e-4 at TP 1 billed 3 idle chips)."""
    values = config_with("tpu-v6e", model=short("gemma-4-31b-it", "bf16"), tpu__acceleratorType="v6e-8")
    settings = settings_from_config(values)
    assert isinstance(settings, TpuStack)
    assert settings.vllm.tensor_parallel_size == 8


@pytest.mark.parametrize(
    ("stack", "changes", "expected"),
    [
        pytest.param(
            "l4",
            {"model": short("gemma-4-26b-a4b-it", "qat-w4a16-ct")},
            "model.variant: 'qat-w4a16-ct' is not a variant of gemma-4-26b-a4b-it; allowed: bf16, "
            "qat-q4_0-unquantized, fp8, nvfp4, nvfp4-nvidia",
            id="unknown-variant",
        ),
        pytest.param(
            "l4",
            {"model": {"id": "gemma-4-31b-it", "variant": "bf16"}},
            "model.revision: required with model.id: the 40-hex commit of google/gemma-4-31B-it",
            id="revision-required",
        ),
        pytest.param(
            "l4",
            {"model": short("gemma-4-31b-it", "bf16")},
            "model.variant: capacity: weights need 62.49 GB (58.20 GiB) plus about 2.00 GiB of runtime overhead, but "
            "only 21.23 GiB is usable (0.95 x 1 x 22.35 GiB on NVIDIA L4)",
            id="31b-bf16-on-l4",
        ),
        pytest.param(
            "tpu-v6e",
            {"model": short("gemma-4-31b-it", "nvfp4")},
            "model.variant: gemma-4-31b-it nvfp4 (nvfp4 weights) cannot run on TPU v6e (Trillium): NVFP4 is an NVIDIA "
            "weight format",
            id="nvfp4-on-tpu",
        ),
        pytest.param(
            "tpu-v6e",
            {"model": short("gemma-4-12b-it", "qat-w4a16-ct")},
            "model.variant: gemma-4-12b-it qat-w4a16-ct (int4 weights) cannot run on TPU v6e (Trillium)",
            id="w4a16-on-tpu",
        ),
        pytest.param(
            "tpu-v6e",
            {"model": short("gemma-4-31b-it", "bf16")},
            "tpu.acceleratorType: gemma-4-31b-it needs at least 4 TPU v6e chips",
            id="31b-on-one-chip",
        ),
        pytest.param(
            "tpu-v6e",
            {"tpu__acceleratorType": "v6e-4", "vllm__tensorParallelSize": 1},
            "vllm.tensorParallelSize 1 uses 1 of the 4 chips of tpu.acceleratorType v6e-4: the other 3 sit idle "
            "billing $4.05/h for nothing; set it to 4 (the default) or use a slice of 1 chip(s)",
            id="idle-tpu-chips",
        ),
        pytest.param(
            "tpu-v6e",
            {"vllm__quantization": "compressed-tensors"},
            "vllm.quantization: 'compressed-tensors' reads a checkpoint stored in that format, but "
            "google/gemma-4-12B-it is unquantized",
            id="bf16-with-compressed-tensors",
        ),
        pytest.param(
            "rtx6000",
            {
                "model": short("gemma-4-31b-it", "nvfp4", drafterRevision=REV),
                "vllm__speculative__drafter": ("gemma-4-12B-it-assistant"),
            },
            "vllm.speculative.drafter: google/gemma-4-12B-it-assistant drafts for gemma-4-12b-it, not for "
            "gemma-4-31b-it, the model this stack serves (its tokens would be rejected); use "
            "google/gemma-4-31B-it-assistant (upstream recommends 4-8 speculative tokens)",
            id="drafter-of-another-model",
        ),
        pytest.param(
            "l4",
            {"vllm__dtype": "float16"},
            "vllm.dtype: 'float16' contradicts gemma-4-12b-it qat-w4a16-ct, whose weights are bfloat16 (int4); "
            "allowed: auto, bfloat16",
            id="dtype-contradicts-variant",
        ),
        pytest.param(
            "l4",
            {"model": {**short("gemma-4-12b-it", "bf16"), "source": {"gcs": "gs://b/x"}}},
            "model.source: a catalog model (model.id gemma-4-12b-it) takes its repo from the catalog",
            id="source-beside-id",
        ),
    ],
)
def test_refused_at_load_naming_the_key(stack: str, changes: dict[str, object], expected: str) -> None:
    """Each mistake listed in issue 26 (and its neighbours) fails the load with the key and what would work."""
    assert f"{P}{expected}" in problems_of(config_with(stack, **changes))


def test_the_long_way_gets_the_same_checks() -> None:
    """Naming the 31B by its Hugging Face repo instead of model.id still refuses it on the L4, with the numbers."""
    model = {
        "path": "gemma-4-31B-it",
        "servedName": "gemma",
        "source": {"huggingFace": {"repo": "google/gemma-4-31B-it", "revision": REV}},
    }
    problems = problems_of(config_with("l4", model=model, vllm__quantization=None))
    assert problems.startswith(f"{P}model.path: capacity: weights need 62.49 GB (58.20 GiB)")


def test_an_mtp_drafter_is_not_a_model_to_serve() -> None:
    """Pointing model.path at an -assistant checkpoint would serve a 4-layer drafter as the model."""
    model = {"path": "gemma-4-31B-it-assistant", "servedName": "gemma"}
    problems = problems_of(config_with("l4", model=model, vllm__quantization=None))
    assert "model.path: google/gemma-4-31B-it-assistant is an MTP drafter" in problems


def test_vllm_underscore_flag_spelling_is_accepted_and_normalised() -> None:
    """`--max_num_batched_tokens` (vLLM accepts it) was refused as "not a flag"; the plan shows the dashed form."""
    values = config_with("l4", vllm__extraArgs=["--max_num_batched_tokens=4096"], vllm__maxNumBatchedTokens=None)
    settings = settings_from_config(values)
    assert "--max-num-batched-tokens=4096" in settings.serve_args()
    assert settings.vllm.batched_tokens == 4096


def test_an_unconfirmed_variant_loads_with_a_warning() -> None:
    """A variant nobody has shown on this accelerator (FP8 on the Ada L4) plans, and `pulumi up` warns why."""
    settings = settings_from_config(config_with("l4", model=short("gemma-4-e4b-it", "fp8")))
    (warning,) = assess_stack(settings).warnings
    assert warning.startswith("gemma-4-e4b-it fp8 on NVIDIA L4 is unconfirmed: the recipe says FP8 (E4M3) W8A8")
