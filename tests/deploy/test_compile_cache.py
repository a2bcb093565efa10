"""`compileCache`: vLLM's compile cache kept in the model bucket's compile-cache/ folder, and nothing more writable."""

from __future__ import annotations

from typing import Any

import pytest

from policy.storage_writes import check_serving_writes_only_the_cache
from preview.capture import Capture
from preview.cold_start_plan import GPU_COMPILE_CACHE, TPU_COMPILE_CACHE, cold_start_document
from serving.compile_cache import (
    CACHE_FOLDER,
    CACHE_WRITER_ROLE,
    GPU_CACHE_ENV,
    GPU_CACHE_PREFIX,
    GPU_CONTAINER_CACHE_DIR,
)
from stacks.loading import settings_from_config
from tests.conftest import render_stack
from tests.stacks.test_settings import config_with, problems_of

SERVICE = "gcp:cloudrunv2/service:Service"
BUCKET = "gcp:storage/bucket:Bucket"
FOLDER = "gcp:storage/managedFolder:ManagedFolder"
FOLDER_GRANT = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"
BUCKET_GRANT = "gcp:storage/bucketIAMMember:BucketIAMMember"
GPU_EXAMPLE = "gemma4-26b-rtx6000"  # examples/: the GPU stack that turns it on
TPU_EXAMPLE = "tpu-v6e-fallback"  # examples/: the TPU stack that turns it on


def _serving_grants(capture: Capture) -> list[dict[str, Any]]:
    return [
        dict(grant.inputs)
        for kind in (FOLDER_GRANT, BUCKET_GRANT)
        for grant in capture.of_type(kind)
        if "-vllm@" in str(grant.inputs.get("member"))
    ]


@pytest.mark.parametrize("value", ["true", '{"keep": true}', '{"keep": true, "maxAgeDays": 7}'])
def test_the_setting_reads_as_written(value: str) -> None:
    """`compileCache: true` and the block form mean the same; the default is off."""
    settings = settings_from_config(config_with("l4", compileCache=value))
    assert settings.compile_cache.keep
    assert not settings_from_config(config_with("l4")).compile_cache.keep


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"compileCache": '{"keep": true, "maxAgeDay": 7}'}, "compileCache.maxAgeDay"),
        ({"compileCache": '{"keep": true, "maxAgeDays": 0}'}, "compileCache.maxAgeDays"),
        ({"compileCache": "true", "model__path": "compile-cache/gemma"}, "model.path"),
    ],
)
def test_a_wrong_cache_setting_names_its_key(changes: dict[str, str], expected: str) -> None:
    """A typo or a checkpoint inside the writable folder is refused with the key named, not ignored."""
    assert expected in problems_of(config_with("l4", **changes))


def test_a_gke_fleet_asking_for_the_cache_is_refused_with_the_reason() -> None:
    """GKE pods get no cache wiring yet: the stack says so instead of silently not keeping it."""
    problems = problems_of(config_with("gke-l4x4", compileCache="true"))
    assert "compileCache.keep: not wired for GKE" in problems


def test_shipped_stacks_keep_no_cache_and_say_how_to_turn_it_on() -> None:
    """The shipped plans make nothing writable; their plan row says the cache is not kept, and how to keep it."""
    for stack, text in (("l4", GPU_COMPILE_CACHE), ("rtx6000", GPU_COMPILE_CACHE), ("tpu-v6e", TPU_COMPILE_CACHE)):
        capture = render_stack(stack)
        assert not capture.of_type(FOLDER) or all(
            folder.inputs["name"] != CACHE_FOLDER for folder in capture.of_type(FOLDER)
        )
        assert all(grant["role"] == "roles/storage.objectViewer" for grant in _serving_grants(capture))
        settings = settings_from_config(config_with(stack))
        assert cold_start_document(settings)["compileCache"] == text
        assert "compileCache: true" in text


def test_the_gpu_example_mounts_only_the_cache_folder_read_write() -> None:
    """The service sees the cache at VLLM_CACHE_ROOT on a read-write volume narrowed to the cache folder;
    the model volume stays read-only and the pack's write rule passes the service."""
    capture = render_stack(GPU_EXAMPLE)
    (service,) = capture.of_type(SERVICE)
    template = service.inputs["template"]
    volumes = {volume["name"]: volume for volume in template["volumes"]}
    assert volumes["models"]["gcs"]["readOnly"] is True
    cache = volumes["compile-cache"]["gcs"]
    assert cache["readOnly"] is False
    assert f"only-dir={GPU_CACHE_PREFIX.rstrip('/')}" in cache["mountOptions"]
    vllm = template["containers"][0]
    assert {"name": "compile-cache", "mountPath": GPU_CONTAINER_CACHE_DIR} in vllm["volumeMounts"]
    assert {"name": GPU_CACHE_ENV, "value": GPU_CONTAINER_CACHE_DIR} in vllm["envs"]
    assert list(check_serving_writes_only_the_cache(SERVICE, service.inputs, {})) == []


@pytest.mark.parametrize("stack", [GPU_EXAMPLE, TPU_EXAMPLE])
def test_the_serving_identity_writes_the_cache_folder_and_nothing_else(stack: str) -> None:
    """Least privilege: objectUser on the compile-cache/ managed folder only; the bucket stays read-only to it,
    and the cache objects expire after maxAgeDays (the weights never do)."""
    capture = render_stack(stack)
    grants = _serving_grants(capture)
    writes = [grant for grant in grants if grant["role"] != "roles/storage.objectViewer"]
    assert writes == [
        {
            "bucket": writes[0]["bucket"],
            "managedFolder": CACHE_FOLDER,
            "role": CACHE_WRITER_ROLE,
            "member": writes[0]["member"],
        }
    ]
    (bucket,) = capture.of_type(BUCKET)
    assert bucket.inputs["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"age": 30, "matchesPrefixes": [CACHE_FOLDER]}}
    ]


def test_the_plans_say_where_the_cache_is_kept() -> None:
    """The reviewer reads in the plan (text and JSON) that the cache is kept, where, and who may write it."""
    for stack, where in ((GPU_EXAMPLE, "compile-cache/torch/"), (TPU_EXAMPLE, "compile-cache/xla/")):
        settings = settings_from_config(config_with(stack))
        row = cold_start_document(settings)["compileCache"]
        assert row.startswith("kept in gs://")
        assert where in row
        assert "never the weights" in row
