"""The import job for a LoRA adapter: it checks adapter_config.json against the stack, then writes it for vLLM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from job_scripts.import_weights import (
    ADAPTER_CONFIG,
    ADAPTER_RECORD,
    MARKER_NAME,
    AdapterCheck,
    AdapterMismatchError,
    run_import,
)
from tests.components.test_model_import_job import FIXED_CLOCK, FakeBucket, hub, quiet

SERVED = "/mnt/models/gemma-4-12B-it-qat-w4a16-ct"
CHECK = AdapterCheck(
    name="support-bot",
    bases=("gemma-4-12b-it", "google/gemma-4-12B-it", "google/gemma-4-12B-it-qat-w4a16-ct"),
    rank=16,
    target_modules=("q_proj", "v_proj"),
    served_model_path=SERVED,
)


def _adapter_files(**config: Any) -> dict[str, bytes]:
    peft = {
        "peft_type": "LORA",
        "r": 16,
        "lora_alpha": 32,
        "target_modules": ["v_proj", "q_proj"],
        "base_model_name_or_path": "google/gemma-4-12B-it",
    }
    peft.update(config)
    return {ADAPTER_CONFIG: json.dumps(peft).encode(), "adapter_model.safetensors": b"\x00" * 64}


def _run(files: dict[str, bytes], bucket: FakeBucket) -> None:
    run_import(hub(files), bucket, workers=1, log=quiet, clock=lambda: FIXED_CLOCK, adapter=CHECK)


def test_adapter_is_finalised_for_vllms_resolver_and_marked_complete() -> None:
    """vLLM's filesystem resolver loads an adapter only if its base is the served model's path."""
    bucket = FakeBucket()
    _run(_adapter_files(), bucket)
    written = json.loads(bucket.objects[ADAPTER_CONFIG])
    assert written["base_model_name_or_path"] == SERVED
    record = json.loads(bucket.objects[ADAPTER_RECORD])
    assert record["trainedOn"] == "google/gemma-4-12B-it"
    assert bucket.events[-1] == f"write {MARKER_NAME}"


def test_second_run_skips_and_keeps_the_finalised_config() -> None:
    """The rewritten config must not look 'changed' to the next run, or every `pulumi up` recopies it."""
    bucket = FakeBucket()
    _run(_adapter_files(), bucket)
    events = len(bucket.events)
    _run(_adapter_files(), bucket)
    assert bucket.events[events:] == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"r": 64}, "r is 64"),
        ({"base_model_name_or_path": "google/gemma-4-31B-it"}, "trained on 'google/gemma-4-31B-it'"),
        ({"target_modules": ["q_proj", "v_proj", "lm_head"]}, "targets"),
        ({"peft_type": "IA3"}, "peft_type"),
        ({"use_dora": True}, "DoRA"),
    ],
)
def test_mismatched_adapter_is_refused_and_never_marked_complete(change: dict[str, Any], named: str) -> None:
    """A mismatched adapter would fail at its first request in production; the import refuses it by name."""
    bucket = FakeBucket()
    with pytest.raises(AdapterMismatchError, match=named):
        _run(_adapter_files(**change), bucket)
    assert MARKER_NAME not in bucket.objects
    assert ADAPTER_CONFIG not in bucket.objects


def test_source_without_adapter_config_is_refused() -> None:
    """A folder of weights without adapter_config.json is not a PEFT adapter."""
    with pytest.raises(AdapterMismatchError, match=r"no adapter_config\.json"):
        _run({"adapter_model.safetensors": b"\x00"}, FakeBucket())
