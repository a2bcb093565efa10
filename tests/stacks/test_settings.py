"""Settings validation: each mistake the hand-made deployments made fails with the key and what is allowed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.catalog_model import resolve_catalog_model
from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import CloudRunStack
from tests.conftest import stack_config

# The keys of a catalog model's short form (stacks/catalog_model.py).
_SHORT_FORM = {"id", "variant", "revision", "drafterRevision"}


def long_form(values: dict[str, str]) -> dict[str, str]:
    """The same stack with its catalog model written the long way (model.path, model.source, vllm.quantization,
    the drafter's path and source), as the shipped stacks were written before the catalog."""
    raw = {
        key.removeprefix("gemma-serving:"): json.loads(value) if value[:1] in "{[" else value
        for key, value in values.items()
        if key.startswith("gemma-serving:")
    }
    resolved = resolve_catalog_model(raw)
    out = dict(values)
    out["gemma-serving:model"] = json.dumps({k: v for k, v in resolved["model"].items() if k not in _SHORT_FORM})
    out["gemma-serving:vllm"] = json.dumps(resolved["vllm"])
    return out


def _long_form_change(key: str, value: object) -> bool:
    """A change that writes the model the long way (a whole model without `id`, or one of its long-form keys)."""
    if key == "model":
        return not (isinstance(value, dict) and "id" in value)
    return key.startswith("model__") and key.split("__")[1] not in _SHORT_FORM


def config_with(stack: str = "l4", /, **changes: Any) -> dict[str, str]:
    """The stack file's config with some top-level keys replaced or nested keys patched (a.b.c=value). A change
    to the model's long-form keys (path, source, ...) applies to the stack written the long way."""
    values = dict(stack_config(stack).values)
    if any(_long_form_change(key, value) for key, value in changes.items()):
        values = long_form(values)
    for dotted, value in changes.items():
        key, *path = dotted.split("__")
        full = f"gemma-serving:{key}"
        if not path:
            values[full] = value if isinstance(value, str) else json.dumps(value)
            continue
        block = json.loads(values.get(full, "{}"))
        target = block
        for part in path[:-1]:
            target = target.setdefault(part, {})
        if value is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
        values[full] = json.dumps(block)
    return values


def problems_of(values: dict[str, str]) -> str:
    with pytest.raises(StackConfigError) as caught:
        settings_from_config(values)
    return str(caught.value)


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_shipped_gpu_stacks_are_valid(stack: str) -> None:
    """A stack file we ship must never fail its own validation."""
    settings = settings_from_config(stack_config(stack).values)
    assert isinstance(settings, CloudRunStack)
    assert settings.concurrency >= settings.vllm.max_num_seqs


def test_cpu_below_l4_minimum() -> None:
    """2 CPU on an L4 instance is rejected by Cloud Run at deploy time."""
    message = problems_of(config_with(cloudRun__cpu=2))
    assert "cloudRun.cpu: 2 is below the NVIDIA L4 minimum of 4 CPU per instance" in message


def test_memory_below_rtx6000_minimum() -> None:
    """RTX PRO 6000 instances need 80 GiB; 64 fails the rollout."""
    message = problems_of(config_with("rtx6000", cloudRun__memoryGib=64))
    assert "cloudRun.memoryGib: 64 is below the NVIDIA RTX PRO 6000 Blackwell minimum of 80 GiB" in message


def test_region_without_the_gpu() -> None:
    """us-east4 has L4s but no RTX PRO 6000."""
    message = problems_of(config_with("rtx6000", region="us-east4"))
    assert "region: 'us-east4' has no Cloud Run NVIDIA RTX PRO 6000 Blackwell" in message
    assert "allowed: us-central1, europe-west4, asia-southeast1" in message


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "initialDelaySeconds",
            241,
            "cloudRun.startupProbe.initialDelaySeconds: Input should be less than or equal to 240",
        ),
        ("periodSeconds", 0, "cloudRun.startupProbe.periodSeconds: Input should be greater than or equal to 1"),
        ("timeoutSeconds", 300, "cloudRun.startupProbe.timeoutSeconds: Input should be less than or equal to 240"),
    ],
)
def test_probe_values_outside_cloud_run_ranges(field: str, value: int, expected: str) -> None:
    """Cloud Run rejects probe values outside 0-240 (1-240 for period and timeout)."""
    assert expected in problems_of(config_with(**{f"cloudRun__startupProbe__{field}": value}))


def test_probe_timeout_above_period() -> None:
    """A probe whose timeout exceeds its period is refused by Cloud Run."""
    message = problems_of(config_with(cloudRun__startupProbe={"periodSeconds": 5, "timeoutSeconds": 10}))
    assert "timeoutSeconds (10) must be smaller than periodSeconds (5)" in message


def test_startup_window_shorter_than_model_load() -> None:
    """A startup probe that gives up before the model has loaded kills every cold start."""
    message = problems_of(
        config_with(cloudRun__startupProbe={"periodSeconds": 10, "failureThreshold": 6}, cloudRun__modelLoadSeconds=900)
    )
    assert "gives the container 60 s" in message
    assert "cloudRun.modelLoadSeconds is 900 s" in message


def test_derived_startup_window_covers_model_load() -> None:
    """Unset failureThreshold is sized so initialDelay + period x threshold >= modelLoadSeconds."""
    settings = settings_from_config(config_with(cloudRun__modelLoadSeconds=1234))
    assert isinstance(settings, CloudRunStack)
    run = settings.cloud_run
    assert run.startup_probe.window_seconds(run.startup_failure_threshold()) >= 1234


def test_request_timeout_above_cloud_run_maximum() -> None:
    """Cloud Run's request timeout is at most 3600 s."""
    message = problems_of(config_with(cloudRun__requestTimeoutSeconds=7200))
    assert "cloudRun.requestTimeoutSeconds: Input should be less than or equal to 3600" in message


def test_concurrency_below_max_num_seqs() -> None:
    """Concurrency 4 with maxNumSeqs 64 made Cloud Run, not vLLM, the ceiling (about 3 req/s)."""
    message = problems_of(config_with(cloudRun__concurrency=4))
    assert "cloudRun.concurrency: 4 is below vllm.maxNumSeqs (64)" in message
    assert "Allowed: at least 64" in message


def test_max_instances_below_min_instances() -> None:
    """maxInstances below minInstances is refused naming both keys (Cloud Run would reject the service)."""
    message = problems_of(config_with(cloudRun__minInstances=3, cloudRun__maxInstances=1))
    assert "cloudRun.maxInstances (1) must be at least cloudRun.minInstances (3)" in message


def test_unknown_top_level_key() -> None:
    """A typo at the top level is an error, not a silently ignored setting."""
    values = config_with()
    values["gemma-serving:regoin"] = "us-east4"
    message = problems_of(values)
    assert "gemma-serving:regoin: unknown key (a typo?)" in message
    assert "region" in message


def test_typo_inside_nested_block() -> None:
    """`maxNumSeq` inside the vllm block must not fall back to a default."""
    message = problems_of(config_with(vllm__maxNumSeq=32))
    assert "gemma-serving:vllm.maxNumSeq: unknown key (a typo?); did you mean maxNumSeqs? allowed here:" in message


def test_typo_two_levels_deep() -> None:
    """A typo in a nested key is an error naming it and the keys allowed there, never an ignored setting."""
    message = problems_of(config_with(cloudRun__mount__uidd=1001))
    assert "gemma-serving:cloudRun.mount.uidd: unknown key (a typo?); did you mean uid? allowed here:" in message
    assert "extraOptions, gid, mountPath, uid" in message


def test_speculative_decoding_without_drafter() -> None:
    """Gemma 4 MTP without the -assistant checkpoint would draft with the target model."""
    values = long_form(stack_config("rtx6000").values)
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm["speculative"] = {"method": "mtp", "numSpeculativeTokens": 3}
    message = problems_of({**values, "gemma-serving:vllm": json.dumps(vllm)})
    assert "vllm.speculative.drafter: method 'mtp' needs a drafter model" in message


def test_unknown_speculative_method() -> None:
    """A speculative method vLLM 0.32 does not know fails the preview, not the container's start."""
    message = problems_of(config_with("rtx6000", vllm__speculative__method="medusa2"))
    assert "'medusa2' is not a speculative method that vLLM 0.32.0 accepts" in message


@pytest.mark.parametrize(
    ("key", "value", "label"),
    [
        ("kvCacheDtype", "fp9", "kv-cache dtype"),
        ("toolCallParser", "gemma5", "tool-call parser"),
        ("reasoningParser", "gemma", "reasoning parser"),
        ("dtype", "bf16", "dtype"),
    ],
)
def test_choices_vllm_does_not_accept(key: str, value: str, label: str) -> None:
    """A misspelled choice crashes vLLM at start-up, ten minutes into a rollout."""
    message = problems_of(config_with(**{f"vllm__{key}": value}))
    assert f"gemma-serving:vllm.{key}: {value!r} is not a {label} that vLLM 0.32.0 accepts; allowed:" in message


@pytest.mark.parametrize(
    "image",
    ["vllm/vllm-openai", "vllm/vllm-openai:latest", "vllm/vllm-openai:nightly", "vllm/vllm-openai@sha256:abc"],
)
def test_unpinned_image(image: str) -> None:
    """Unpinned images make two rollouts of one commit deploy different vLLM builds."""
    message = problems_of(config_with(image=image))
    assert "gemma-serving:image:" in message
    assert "use a release tag" in message


def test_pinned_digest_is_accepted() -> None:
    """A digest is a valid pin: the pin check must not refuse the most exact reference there is."""
    digest = "vllm/vllm-openai@sha256:" + "a" * 64
    assert settings_from_config(config_with(image=digest)).image_ref == digest


def test_removed_vllm_flags_in_extra_args() -> None:
    """--speculative-model / --num-speculative-tokens were removed from vLLM."""
    message = problems_of(config_with(vllm__extraArgs=["--speculative-model", "x", "--num-speculative-tokens", "3"]))
    assert "--speculative-model was removed from vLLM" in message
    assert "--num-speculative-tokens was removed from vLLM" in message


def test_extra_args_cannot_override_managed_flags() -> None:
    """extraArgs cannot set a flag the program renders (it would be given twice, or contradict the settings)."""
    message = problems_of(config_with(vllm__extraArgs=["--max-num-seqs", "999"]))
    assert "vllm.extraArgs sets ['--max-num-seqs']" in message


def test_public_invoker_refused() -> None:
    """allUsers would publish a GPU endpoint anyone can spend."""
    message = problems_of(config_with(cloudRun__invokers=["allUsers"]))
    assert "'allUsers' would make the service public" in message


def test_credential_in_plain_env_refused() -> None:
    """A credential in a plain env value (visible to every project viewer) is refused without echoing it."""
    message = problems_of(config_with(cloudRun__env={"HF_TOKEN": "hf_abc"}))
    assert "'HF_TOKEN' looks like a credential" in message
    assert "hf_abc" not in message


def test_mount_options_are_gcsfuse_flags_without_dashes() -> None:
    """gcsfuse options written as command-line flags ('--implicit-dirs') would break the mount."""
    message = problems_of(config_with(cloudRun__mount__extraOptions=["--implicit-dirs"]))
    assert "is not a gcsfuse mount option" in message


def test_tensor_parallel_above_one_on_cloud_run() -> None:
    """Cloud Run gives an instance one GPU: tensor parallel 2 would never start."""
    message = problems_of(config_with(vllm__tensorParallelSize=2))
    assert "vllm.tensorParallelSize: Cloud Run attaches exactly one GPU per instance" in message


def test_auto_tool_choice_needs_a_parser() -> None:
    """Auto tool choice without a parser makes vLLM answer 400 to tool_choice=auto; the settings refuse it."""
    message = problems_of(config_with(vllm__toolCallParser=None))
    assert "vllm.enableAutoToolChoice needs vllm.toolCallParser" in message


def test_project_set_in_the_wrong_namespace() -> None:
    """A project under gemma-serving: instead of gcp:project is refused, saying where it belongs."""
    values = config_with()
    values["gemma-serving:project"] = "p"
    assert "set the Google Cloud project as gcp:project" in problems_of(values)


def test_missing_required_block() -> None:
    """A stack file without a required block says which one is missing."""
    values = config_with()
    del values["gemma-serving:vllm"]
    assert "gemma-serving:vllm: required but not set" in problems_of(values)
