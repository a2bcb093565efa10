"""The route guard as the stack settings install it: every platform's launch line, with or without adapters, and
the settings that would open a door beside it refused by their key (issue 46's findings).

Why here: `gke.env` / `cloudRun.env` accepted `VLLM_SERVER_DEV_MODE=1` (which mounts /server_info, /sleep,
/collective_rpc, /update_weights without the key), `VLLM_ALLOW_RUNTIME_LORA_UPDATING` and
`VLLM_LORA_RESOLVER_CACHE_DIR`; a fleet's pods admitted all of 10/8, 172.16/12 and 192.168/16.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy import route_guard as policy_guard
from serving.guard_runtime import REFUSED_ENV
from serving.route_guard import GUARD_MIDDLEWARE, launcher_source
from serving.vllm_args import check_serve_args
from stacks.loading import StackConfigError, settings_from_config
from stacks.route_guard import answered_names
from stacks.settings import CloudRunStack, GkeStack, TpuStack
from tests.conftest import ROOT, stack_config

SHIPPED = sorted(
    path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    for path in [*ROOT.glob("Pulumi.*.yaml"), *ROOT.glob("examples/Pulumi.*.yaml")]
    if path.name != "Pulumi.yaml"
)


def _with(stack: str, key: str, **changes: Any) -> dict[str, str]:
    values = dict(stack_config(stack).values)
    block = json.loads(values[f"gemma-serving:{key}"])
    for dotted, value in changes.items():
        target = block
        *path, last = dotted.split("__")
        for part in path:
            target = target.setdefault(part, {})
        target[last] = value
    values[f"gemma-serving:{key}"] = json.dumps(block)
    return values


def _refused(values: dict[str, str]) -> str:
    with pytest.raises(StackConfigError) as raised:
        settings_from_config(values)
    return str(raised.value)


@pytest.mark.parametrize("stack", SHIPPED)
def test_every_shipped_stack_starts_vllm_behind_the_guard(stack: str) -> None:
    """With or without adapters, on every platform: the launcher, the middleware, and arguments vLLM parses."""
    settings = settings_from_config(stack_config(stack).values)
    command = settings.serving_command()
    assert command[:2] == ["python3", "-c"]
    assert command[2].endswith(launcher_source().split("\n", 1)[1])  # the guard's module last, then its launch
    assert command[-1] == "serve"
    config = json.loads(command[3])
    assert config["names"] == [settings.model.served_name, *(adapter.name for adapter in settings.adapters)]
    assert config["versioned"] is bool(settings.adapters)
    args = settings.serve_args()
    middleware = [args[i + 1] for i, arg in enumerate(args) if arg == "--middleware"]
    assert middleware[-1] == GUARD_MIDDLEWARE  # the outermost
    assert check_serve_args(args) == []


def test_each_platform_says_who_holds_the_key_and_who_scrapes() -> None:
    """Cloud Run: IAM, no vLLM key; TPU VM: the key, the collector on loopback; GKE: the key, the collectors
    outside the client ranges the NetworkPolicy names."""
    run = settings_from_config(stack_config("l4").values)
    tpu = settings_from_config(stack_config("tpu-v6e").values)
    gke = settings_from_config(stack_config("gke-l4x4").values)
    assert isinstance(run, CloudRunStack)
    assert isinstance(tpu, TpuStack)
    assert isinstance(gke, GkeStack)
    assert (run.guard_config().key, tpu.guard_config().key, gke.guard_config().key) == ("none", "required", "required")
    assert (tpu.guard_config().scrapers, gke.guard_config().scrapers) == ("loopback", "network")
    assert gke.guard_config().clients == ("192.168.254.0/23",)


def test_the_names_the_server_answers_are_the_served_name_then_the_adapters() -> None:
    """One function (the adapters' lifecycle adds its names there); the order is the plan's, duplicates once."""
    settings = settings_from_config(stack_config("gemma4-12b-adapters-l4").values)
    assert answered_names(settings.model.served_name, settings.adapters) == settings.answered_names()
    assert settings.answered_names() == ("gemma-4-12b-it", "support-bot", "sql-writer")


ROUTE_CHANGING_ENV = [
    "VLLM_SERVER_DEV_MODE",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING",
    "VLLM_LORA_RESOLVER_CACHE_DIR",
    "VLLM_LORA_RESOLVER_HF_REPO_LIST",
    "VLLM_PLUGINS",
    "VLLM_USE_RUST_FRONTEND",
    "VLLM_SKIP_MODEL_NAME_VALIDATION",
    "VLLM_ENABLE_COHERE_API",
    "VLLM_USE_MODELSCOPE",
    "VLLM_DEBUG_LOG_API_SERVER_RESPONSE",
    "FORWARDED_ALLOW_IPS",
    "PYTHONPATH",
    "SAGEMAKER_MODEL_PATH",
    "CUSTOM_FASTAPI_PING_HANDLER",
    "STANDARD_AUTO_INSTALL_REQ",
]


@pytest.mark.parametrize("name", ROUTE_CHANGING_ENV)
@pytest.mark.parametrize(("stack", "key"), [("l4", "cloudRun"), ("gke-l4x4", "gke")])
def test_env_that_changes_vllms_routes_auth_or_adapters_is_refused_naming_the_key(
    stack: str, key: str, name: str
) -> None:
    """`gke.env: {VLLM_SERVER_DEV_MODE: "1"}` previewed, and the dev routes answered without the key."""
    values = dict(stack_config(stack).values)
    block = json.loads(values[f"gemma-serving:{key}"])
    block["env"] = {**block.get("env", {}), name: "1"}
    values[f"gemma-serving:{key}"] = json.dumps(block)
    message = _refused(values)
    assert f"{key}.env: {name!r} is not allowed in a serving container" in message


def test_the_settings_refuse_what_the_launcher_refuses_at_start() -> None:
    """One table: what a stack file may not set is what the launcher refuses to start vLLM with."""
    values = dict(stack_config("l4").values)
    block = json.loads(values["gemma-serving:cloudRun"])
    for name in REFUSED_ENV:
        block["env"] = {name: "1"}
        values["gemma-serving:cloudRun"] = json.dumps(block)
        assert name in _refused(values)


def test_the_pack_knows_the_launcher_by_the_names_it_uses() -> None:
    """The policy pack imports nothing of the project: its copy of the launcher's names must stay the same."""
    assert policy_guard.GUARD_MIDDLEWARE == GUARD_MIDDLEWARE
    assert policy_guard.LAUNCHER_MARKER in launcher_source()


@pytest.mark.parametrize(
    "extra",
    [
        ["--middleware", "evil.Open"],
        ["--api-server-count", "2"],
        ["-dp", "2"],
        ["--data-parallel-size=2"],
        ["--headless"],
        ["--grpc"],
        ["--root-path", "/x"],
    ],
)
def test_extra_args_that_would_put_vllm_beside_the_guard_are_refused(extra: list[str]) -> None:
    """The guard is the outermost middleware of the one API server: a second server, a gRPC front end or more
    API processes (data parallel starts one per rank) would serve without it."""
    values = dict(stack_config("l4").values)
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm["extraArgs"] = extra
    values["gemma-serving:vllm"] = json.dumps(vllm)
    assert "route guard" in _refused(values)


def test_a_fleet_admits_named_clients_only() -> None:
    """A one-replica fleet on a custom network must name its clients; on the default network its subnets are
    the auto-mode block; a wide range is refused by its key."""
    custom = _with("gke-l4x2-31b-nvfp4", "gke", cluster__network="serving-vpc", cluster__subnetwork="serving-us")
    assert "gke.service.clientRanges" in _refused(custom)
    named = _with("gke-l4x2-31b-nvfp4", "gke", cluster__network="serving-vpc", service__clientRanges=["10.20.0.0/16"])
    settings = settings_from_config(named)
    assert isinstance(settings, GkeStack)
    assert settings.gke.client_ranges == ("10.20.0.0/16",)
    default = settings_from_config(stack_config("gke-l4x2-31b-nvfp4").values)
    assert isinstance(default, GkeStack)
    assert default.gke.client_ranges == ("10.128.0.0/9",)
    wide = _with("gke-l4x2-31b-nvfp4", "gke", service__clientRanges=["0.0.0.0/1", "128.0.0.0/1"])
    assert "gke.service.clientRanges" in _refused(wide)


def test_an_existing_proxy_subnet_must_be_named() -> None:
    """The pods admit the gateway's proxies from the proxy-only subnet's range: an unnamed one admits nothing."""
    unnamed = _with("gke-l4x4", "gke", gateway__proxySubnetRange=None)
    assert "gke.gateway.existingProxySubnetRange" in _refused(unnamed)
    both = _with("gke-l4x4", "gke", gateway__existingProxySubnetRange="10.129.0.0/23")
    assert "set one of them" in _refused(both)
    named = _with("gke-l4x4", "gke", gateway__proxySubnetRange=None, gateway__existingProxySubnetRange="10.129.0.0/23")
    settings = settings_from_config(named)
    assert isinstance(settings, GkeStack)
    assert settings.guard_config().clients == ("10.129.0.0/23",)
