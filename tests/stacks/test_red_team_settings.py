"""The settings-level attacks of issue 35's red team, each reproduced, each refused before `pulumi up`.

Guards against: a GKE stack deployed into `kube-system` or `default` (its pods, account and secrets beside
the cluster's own); a plaintext hfToken accepted on GKE while Cloud Run and TPU refuse it; `Default` taken
for the `default` network on GKE while `tpu.network` refuses it; `tpu.allowedSourceRanges` silently
ignored without a public endpoint (GKE refuses it); a maxModelLen beyond the model's context; and
`extraArgs` carrying --dtype, --quantization or --kv-cache-dtype past the typed checks, in any of the
spellings vLLM accepts.
"""

from __future__ import annotations

import json

import pytest

from deploy.weights import SecretConfigError
from preview.capture import run_program
from stacks.loading import settings_from_config
from tests.conftest import ROOT, stack_config
from tests.deploy.test_secrets import TOKEN, render
from tests.stacks.test_settings import config_with, problems_of

P = "gemma-serving:"


@pytest.mark.parametrize(
    "namespace",
    [
        "kube-system",
        "default",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        "gke-gmp-system",
        "gmp-system",
        "gmp-public",
        "istio-system",
        "config-management-system",
        "gatekeeper-system",
    ],
)
def test_system_namespaces_are_refused(namespace: str) -> None:
    message = problems_of(config_with("gke-l4x4", gke__namespace=namespace))
    assert message.startswith(f"{P}gke.namespace: {namespace!r} belongs to Kubernetes or GKE")


def test_a_namespace_of_the_stacks_own_is_fine() -> None:
    settings_from_config(config_with("gke-l4x4", gke__namespace="gemma-prod"))


def test_a_plaintext_token_is_refused_on_gke_as_elsewhere() -> None:
    """A GKE stack: the check used to run only where a weight source needed the token (see also the next test)."""
    for stack in ("gke-l4x4", "l4"):
        with pytest.raises(SecretConfigError, match="stored in plain text") as caught:
            render(stack, secret=False)
        assert TOKEN not in str(caught.value)


def test_a_plaintext_token_is_refused_on_a_stack_with_no_weight_source() -> None:
    """A stack that fills its bucket by hand never reached the token check: the token sat in the stack file."""
    config = stack_config("gke-l4x4")
    values = {**config.values, "gemma-serving:hfToken": TOKEN}
    model = json.loads(values["gemma-serving:model"])
    model.pop("source", None)
    values["gemma-serving:model"] = json.dumps(model)
    with pytest.raises(SecretConfigError, match="stored in plain text") as caught:
        run_program(ROOT / "__main__.py", project=config.project, stack="gke-l4x4", config=values, secret_keys=[])
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(("stack", "key"), [("gke-l4x4", "gke__cluster__network"), ("tpu-v6e", "tpu__network")])
def test_a_capitalised_default_network_is_refused_on_gke_as_on_tpu(stack: str, key: str) -> None:
    message = problems_of(config_with(stack, **{key: "Default"}))
    assert f"{key.replace('__', '.')}: 'Default' is not a VPC network/subnetwork name" in message


def test_tpu_source_ranges_without_a_public_endpoint_are_refused_like_gkes() -> None:
    """Ranges that open nothing would let a reader believe the port is limited to them."""
    message = problems_of(config_with("tpu-v6e", tpu__allowedSourceRanges=["203.0.113.0/24"]))
    assert "tpu.allowedSourceRanges applies only with publicEndpoint: true" in message
    gke = problems_of(config_with("gke-l4x4", gke__service__allowedSourceRanges=["203.0.113.0/24"]))
    assert "gke.service.allowedSourceRanges applies only with publicEndpoint: true" in gke


@pytest.mark.parametrize(("stack", "context"), [("l4", 262_144), ("gemma4-e4b-l4", 131_072), ("tpu-v6e", 262_144)])
def test_max_model_len_is_bounded_by_the_models_context(stack: str, context: int) -> None:
    """The catalog's config (max_position_embeddings: 262,144 on the 12B, 131,072 on the E4B) bounds it."""
    message = problems_of(config_with(stack, vllm__maxModelLen=context + 1))
    assert message.startswith(f"{P}vllm.maxModelLen: capacity: --max-model-len {context + 1:,} exceeds")
    assert f"max_position_embeddings {context:,}; vLLM refuses to start" in message


@pytest.mark.parametrize(
    ("extra", "flag", "key"),
    [
        (["--dtype", "float16"], "--dtype", "vllm.dtype"),
        (["--dtype=float16"], "--dtype", "vllm.dtype"),
        (["--quantization=fp8"], "--quantization", "vllm.quantization"),
        (["-q", "fp8"], "-q", "vllm.quantization"),
        (["--kv_cache_dtype", "fp8_e5m2"], "--kv-cache-dtype", "vllm.kvCacheDtype"),
        (["--kv-cache-dtype=fp8_e5m2"], "--kv-cache-dtype", "vllm.kvCacheDtype"),
        (["--max_model_len=300000"], "--max-model-len", "vllm.maxModelLen"),
        (["-tp", "2"], "-tp", "vllm.tensorParallelSize"),
    ],
)
def test_extra_args_cannot_bypass_the_typed_checks(extra: list[str], flag: str, key: str) -> None:
    message = problems_of(config_with("l4", vllm__extraArgs=extra))
    assert f"vllm.extraArgs sets ['{flag}'], which the program renders from typed settings" in message
    assert f"{flag} -> {key}" in message


def test_other_extra_args_still_pass() -> None:
    settings = settings_from_config(config_with("l4", vllm__extraArgs=["--enable-prefix-caching"]))
    assert "--enable-prefix-caching" in settings.vllm.extra_args
