"""The one adapter from stack files to what the ops commands need."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify.ops.scenarios import ROOT, ops_stack
from verify import UsageError
from verify.ops.stack import CloudRunOpsStack, TpuOpsStack, load_ops_stack


def test_cloud_run_stack_shape() -> None:
    """l4: its GPU, CPU/memory and instances, the APIs it enables, and the names its resources get."""
    stack = ops_stack("l4")
    assert isinstance(stack, CloudRunOpsStack)
    assert stack.platform == "cloud-run"
    assert stack.zone is None
    assert (stack.gpu, stack.cpu, stack.memory_gib) == ("nvidia-l4", 8, 32)
    assert stack.gpu_zonal_redundancy_disabled
    assert stack.health_auth == "google"
    assert "run.services.create" in {permission.name for permission in stack.permissions}
    assert "tpu.queuedresources.create" not in {permission.name for permission in stack.permissions}
    assert "run.googleapis.com" in stack.apis
    assert "tpu.googleapis.com" not in stack.apis
    assert stack.labels == {"managed-by": "gemma-serving", "stack": "l4"}
    assert stack.base_name == "gemma-l4-vllm"


def test_tpu_stack_shape() -> None:
    """tpu-v6e: zone, slice, flex-start (preemptible quota, only two zones), and its queued resource's name."""
    stack = ops_stack("tpu-v6e")
    assert isinstance(stack, TpuOpsStack)
    assert stack.platform == "tpu"
    assert (stack.zone, stack.accelerator_type, stack.chips) == ("us-east5-a", "v6e-1", 1)
    assert stack.preemptible
    assert stack.candidate_zones == ("us-east5-a", "asia-northeast1-b")
    assert stack.runtime_version == "v2-alpha-tpuv6e"
    assert stack.queued_resource_name == "projects/proj-1/locations/us-east5-a/queuedResources/gemma-tpu-v6e-vllm"
    assert stack.node_name == "projects/proj-1/locations/us-east5-a/nodes/gemma-tpu-v6e-vllm"
    assert stack.health_auth == "none"  # vLLM's --api-key leaves /health open
    assert "tpu.queuedresources.create" in {permission.name for permission in stack.permissions}
    assert "run.services.create" not in {permission.name for permission in stack.permissions}
    assert {"tpu.googleapis.com", "compute.googleapis.com"} <= set(stack.apis)


def test_project_flag_overrides_and_is_required_without_gcp_project() -> None:
    """Stack files carry no project: without --project the user is told how to give one."""
    with pytest.raises(UsageError, match="pass --project"):
        load_ops_stack("l4", root=ROOT)
    assert load_ops_stack("l4", root=ROOT, project="other-project").project == "other-project"


def test_invalid_settings_fail_like_the_preview(tmp_path: Path) -> None:
    """A stack file the preview refuses is refused here with the same key-naming message."""
    root = ROOT
    text = (root / "Pulumi.l4.yaml").read_text(encoding="utf-8").replace("maxNumSeqs: 64", "maxNumSeq: 64")
    (tmp_path / "Pulumi.yaml").write_text((root / "Pulumi.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "Pulumi.l4.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=r"gemma-serving:vllm\.maxNumSeq: unknown key"):
        load_ops_stack("l4", root=tmp_path, project="proj-1")
