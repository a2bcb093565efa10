"""The queued-resource request the TPU request-body and provider tests start from (each varies it with
`dataclasses.replace`): one v6e-1 flex-start node in us-east5-a, labelled and tagged like the stack's."""

from __future__ import annotations

from components.tpu.request_body import FlexStart, QueuedResourceSpec

SPEC = QueuedResourceSpec(
    project="p",
    zone="us-east5-a",
    queued_resource_id="gemma-tpu",
    node_id="gemma-tpu",
    accelerator_type="v6e-1",
    runtime_version="v2-alpha-tpuv6e",
    service_account_email="sa@p.iam.gserviceaccount.com",
    startup_script="#!/bin/bash\n",
    provisioning=FlexStart(4 * 3600),
    labels={"stack": "tpu-v6e"},
    network_tags=["gemma-tpu-vllm"],
)
