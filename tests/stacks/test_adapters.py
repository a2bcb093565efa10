"""LoRA adapters in a stack file: refused when they cannot serve, sized and guarded when they can."""

from __future__ import annotations

import json
from typing import Any

import pytest

from serving.lora import RESOLVER_ENV, derive_lora_limits, rank_choices
from serving.route_guard import GUARD_MIDDLEWARE
from serving.vllm_args import check_serve_args
from stacks.loading import StackConfigError, load_stack
from tests.conftest import ROOT, render_stack, stack_config

EXAMPLE = "gemma4-12b-adapters-l4"
ADAPTERS_KEY = "gemma-serving:adapters"


def _config(adapters: list[dict[str, Any]] | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    config = dict(stack_config(EXAMPLE).values)
    if adapters is not None:
        config[ADAPTERS_KEY] = json.dumps(adapters)
    config.update(extra or {})
    return config


def _example_adapters() -> list[dict[str, Any]]:
    return list(json.loads(stack_config(EXAMPLE).values[ADAPTERS_KEY]))


def _adapter(name: str, **changes: Any) -> dict[str, Any]:
    adapter: dict[str, Any] = {
        "name": name,
        "source": {"gcs": f"gs://acme-gemma-adapters/{name}/v1"},
        "base": "google/gemma-4-12B-it",
        "rank": 16,
    }
    adapter.update(changes)
    return adapter


def _refused(config: dict[str, str]) -> str:
    with pytest.raises(StackConfigError) as raised:
        load_stack(config, root=ROOT)
    return str(raised.value)


def test_example_serves_two_adapters_with_flags_vllm_parses() -> None:
    """The example's `vllm serve` line must carry LoRA flags vLLM's own parser accepts, and the guard."""
    settings = load_stack(_config(), root=ROOT).settings
    args = settings.serve_args()
    assert check_serve_args(args) == []
    assert args[args.index("--max-lora-rank") + 1] == "32"  # the larger rank (32), a choice of vLLM's
    assert args[args.index("--max-loras") + 1] == "4"
    assert [args[i + 1] for i, arg in enumerate(args) if arg == "--middleware"][-1] == GUARD_MIDDLEWARE
    assert settings.lora_env()[RESOLVER_ENV] == "/mnt/models/adapters"


def test_adapter_trained_on_another_base_is_refused_naming_the_key() -> None:
    """A 31B adapter on a 12B stack would be refused by vLLM only at the first request; the plan says so first."""
    adapters = [_adapter("support-bot", base="google/gemma-4-31B-it")]
    message = _refused(_config(adapters))
    assert "adapters[0].base" in message
    assert "gemma-4-12b-it" in message


def test_duplicate_names_and_unknown_modules_are_refused() -> None:
    """Two adapters under one name would shadow each other; lm_head cannot carry LoRA in vLLM."""
    message = _refused(_config([_adapter("bot"), _adapter("bot")]))
    assert "adapters[1].name" in message
    message = _refused(_config([_adapter("bot", targetModules=["lm_head"])]))
    assert "lm_head" in message
    assert "adapters" in message


@pytest.mark.parametrize("name", ["../weights", "Support", "a", "bot/x", "x" * 30])
def test_adapter_names_that_are_not_folder_safe_are_refused(name: str) -> None:
    """The name is a bucket folder and the model clients send: no path parts, no capitals, short."""
    assert "adapters" in _refused(_config([_adapter(name)]))


def test_rank_above_the_stated_max_is_refused() -> None:
    """A rank-64 adapter on a server started with --max-lora-rank 16 fails when loaded; refuse it up front."""
    message = _refused(_config([_adapter("bot", rank=64)], {"gemma-serving:lora": json.dumps({"maxRank": 16})}))
    assert "adapters[0].rank" in message
    assert "lora.maxRank" in message


def test_adapters_on_a_tpu_stack_are_refused_with_the_reason() -> None:
    """vllm-tpu's LoRA is unconfirmed for Gemma 4 and the node copies the bucket once: refuse, saying why."""
    config = dict(stack_config("tpu-v6e").values)
    config[ADAPTERS_KEY] = json.dumps([_adapter("bot", base="gemma-4-12b-it")])
    assert "GPU stack" in _refused(config)


def test_lora_flags_in_extra_args_are_refused() -> None:
    """extraArgs must not size LoRA behind the adapters' back (or install another middleware)."""
    vllm = json.loads(stack_config(EXAMPLE).values["gemma-serving:vllm"])
    vllm["extraArgs"] = ["--max-loras", "1"]
    assert "--max-loras" in _refused(_config(extra={"gemma-serving:vllm": json.dumps(vllm)}))


def test_capacity_grows_in_powers_of_two_and_rounds_rank_to_vllm_choices() -> None:
    """Slots from the count with room to grow; the rank rounded up to one vLLM accepts."""
    assert derive_lora_limits([8, 8]).gpu_slots == derive_lora_limits([8, 8, 8]).gpu_slots == 4
    assert derive_lora_limits([8] * 5).gpu_slots == 8
    assert derive_lora_limits([24]).max_rank == 32
    assert derive_lora_limits([24]).max_rank in rank_choices()
    with pytest.raises(ValueError, match="above vLLM's largest"):
        derive_lora_limits([4096])


def _serving_template(adapters: list[dict[str, Any]]) -> dict[str, Any]:
    """The service's template as the engine would diff it (values only Google knows shown as one marker)."""
    capture = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps(adapters)})
    service = capture.one("gcp:cloudrunv2/service:Service")
    template: dict[str, Any] = json.loads(
        json.dumps(service.inputs["template"], sort_keys=True, default=lambda _unknown: "<computed>")
    )
    return template


def test_a_third_adapter_changes_only_the_names_the_guard_admits() -> None:
    """The guard refuses a `model` the stack does not declare, so a new adapter is a new revision (on a gated
    stack, the candidate at 0% until promoted); nothing else of the template may change with it (the LoRA
    slots grow in powers of two)."""
    two = _example_adapters()
    three = [*two, _adapter("legal-review", rank=8)]
    templates = [_serving_template(two), _serving_template(three)]
    configs = [json.loads(template["containers"][0]["commands"][3]) for template in templates]
    assert configs[1]["names"] == [*configs[0]["names"], "legal-review"]
    for template in templates:
        template["containers"][0]["commands"][3] = "<guard config>"
    assert templates[0] == templates[1]
    capture = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps(three)})
    imports = {r.name for r in capture.of_type("gemma:storage:ModelImport")}
    assert f"gemma-{EXAMPLE}-import-a-legal-review" in imports


def test_the_service_runs_the_launcher_and_waits_for_the_adapters_folder_only() -> None:
    """vLLM's resolver refuses a missing folder at start; the service must not wait on each adapter's import."""
    capture = render_stack(EXAMPLE)
    service = capture.one("gcp:cloudrunv2/service:Service")
    container = service.inputs["template"]["containers"][0]
    assert container["commands"][:2] == ["python3", "-c"]
    keep = [r for r in capture.of_type("gcp:storage/bucketObject:BucketObject") if r.inputs["name"] == "adapters/.keep"]
    assert len(keep) == 1
    assert keep[0].urn in service.dependencies
    adapter_runs = [r.urn for r in capture.of_type("command:local:Command") if "-import-a-" in r.name]
    assert adapter_runs
    assert not set(adapter_runs) & set(service.dependencies)


def test_plan_reserves_lora_memory() -> None:
    """LoRA slots take GPU memory from the KV cache; the capacity plan must count them."""
    with_lora = load_stack(_config(), root=ROOT).capacity
    config = _config()
    del config[ADAPTERS_KEY]
    without = load_stack(config, root=ROOT).capacity
    assert with_lora.plan is not None
    assert without.plan is not None
    assert with_lora.plan.kv_budget_bytes < without.plan.kv_budget_bytes
    assert any("LoRA:" in line for line in with_lora.assumptions)
