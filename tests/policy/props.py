"""Crafted resource properties in the engine's wire form (camelCase names, numbers as floats).

The good shapes mirror what the stacks render; each test copies one and breaks exactly one thing.
"""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs

from policy.guardrail import Guardrail
from serving.route_guard import GuardConfig, guard_args, launcher_command

SECRET_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"

SERVICE = "gcp:cloudrunv2/service:Service"
JOB = "gcp:cloudrunv2/job:Job"
TPU_DYNAMIC = "pulumi-python:dynamic/tpu:QueuedResource"
PLAIN_DYNAMIC = "pulumi-python:dynamic:Resource"

SERVE_ARGS = [
    "/mnt/models/gemma-4-12B-it-qat-w4a16-ct",
    "--served-model-name",
    "gemma-4-12b-it",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--max-num-seqs",
    "64",
    *guard_args(),
]
# vLLM behind the route guard, as every stack starts it (serving/route_guard.py).
LAUNCHER = launcher_command(GuardConfig(names=("gemma-4-12b-it",), key="none"))


def secret(value: Any) -> dict[str, Any]:
    return {SECRET_KEY: SECRET_SIG, "value": value}


def gpu_service() -> dict[str, Any]:
    return copy.deepcopy(
        {
            "location": "us-east4",
            "ingress": "INGRESS_TRAFFIC_ALL",
            "invokerIamDisabled": False,
            "template": {
                "serviceAccount": "gemma-l4-vllm@p.iam.gserviceaccount.com",
                "executionEnvironment": "EXECUTION_ENVIRONMENT_GEN2",
                "maxInstanceRequestConcurrency": 64.0,
                "nodeSelector": {"accelerator": "nvidia-l4"},
                "gpuZonalRedundancyDisabled": True,
                "volumes": [
                    {
                        "name": "models",
                        "gcs": {"bucket": "models-bucket", "readOnly": True, "mountOptions": ["uid=1001", "gid=1001"]},
                    }
                ],
                "containers": [
                    {
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.32.0",
                        "commands": list(LAUNCHER),
                        "args": list(SERVE_ARGS),
                        "envs": [{"name": "HF_HUB_OFFLINE", "value": "1"}],
                        "ports": {"containerPort": 8000.0, "name": "http1"},
                        "resources": {
                            "cpuIdle": False,
                            "startupCpuBoost": True,
                            "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                        },
                        "volumeMounts": [{"name": "models", "mountPath": "/mnt/models"}],
                    }
                ],
            },
        }
    )


def container(props: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = props["template"]["containers"][0]
    return result


def private_bucket() -> dict[str, Any]:
    return {
        "location": "US-EAST4",
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "forceDestroy": False,
    }


def tpu_request(**provisioning: Any) -> dict[str, Any]:
    """The dynamic provider's inputs, with a REST body shaped like components/tpu/request_body.py's."""
    body: dict[str, Any] = {
        "tpu": {
            "nodeSpec": [
                {
                    "parent": "projects/p/locations/us-east5-b",
                    "nodeId": "gemma-v6e",
                    "node": {
                        "acceleratorType": "v6e-1",
                        "runtimeVersion": "v2-alpha-tpuv6e",
                        "networkConfig": {"network": "default", "enableExternalIps": False},
                        "metadata": {
                            "startup-script": "#!/bin/bash\nIMAGE=vllm/vllm-tpu:v0.32.0\n"
                            'docker run --env-file /run/gemma-vllm/vllm.env --entrypoint python3 "$IMAGE" -c '
                            "'import sys, types; ...; sys.exit(guard.launch(sys.argv[1:]))' '{...}' serve "
                            "/mnt/models/m --middleware gemma_serving_guard.RouteGuard\n"
                        },
                        "labels": {"managed-by": "gemma-serving"},
                    },
                }
            ]
        },
        **provisioning,
    }
    return {
        "project": "p",
        "zone": "us-east5-b",
        "queuedResourceId": "gemma-v6e",
        "nodeId": "gemma-v6e",
        "requestBody": body,
        "activeDeadlineSeconds": 7200.0,
        "__provider": "gASVAAAA",
    }


def flex_start(seconds: str = "14400s") -> dict[str, Any]:
    return {"provisioningModel": "FLEX_START", "runDuration": {"maxRunDuration": seconds}}


def options() -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=False,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0.0, 0.0, 0.0),
        additional_secret_outputs=[],
    )


def validation_args(resource_type: str, props: Any, config: dict[str, Any] | None = None) -> ResourceValidationArgs:
    return ResourceValidationArgs(
        resource_type=resource_type,
        props=props,
        urn=f"urn:pulumi:test::gemma-serving::{resource_type}::crafted",
        name="crafted",
        opts=options(),
        provider=None,
        config=config,
    )


def reported(guardrail: Guardrail, resource_type: str, props: Any, config: dict[str, Any] | None = None) -> list[str]:
    """What the guardrail reports through pulumi-policy's callback, exactly as the pack calls it."""
    messages: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        messages.append(message)

    guardrail.validate(validation_args(resource_type, props, config), report)
    return messages
