"""`verify memory`: vLLM's start-up memory lines from Cloud Logging beside the plan, and calibration.

The CPU lines are recorded from a real vLLM 0.32.0; the GPU lines are built from vLLM's own format
strings (tests/verify/fixtures/README.md). Cloud Logging is the local fake of tests/verify/ops.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError
from stacks.calibration import load_record, record_path, save_record
from stacks.capacity import assess_stack
from tests.verify.ops.google_fake import Body, FakeGoogle, tokens
from tests.verify.ops.scenarios import ops_stack
from tests.verify.ops.test_logs import ENTRIES, entry
from verify import UsageError
from verify.memory.cli import print_layout
from verify.memory.layout import MemoryLayout, memory_layout, memory_query
from verify.memory.run import LogsUnreadableError, MemoryOptions, calibration_record, read_memory, save_calibration
from verify.memory.startup import parse_startup
from verify.stack_settings import load_stack_file

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
GPU_LINES = (FIXTURES / "vllm-0.32-gpu-startup-l4.log").read_text(encoding="utf-8").splitlines()
NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)


def test_the_real_cpu_servers_lines_are_read() -> None:
    """A real vLLM 0.32 CPU start-up: KV memory from the CPU worker's line, tokens and concurrency."""
    found = parse_startup((FIXTURES / "vllm-0.32-cpu-startup.log").read_text(encoding="utf-8").splitlines())
    assert found.available_kv_cache_gib == 1.0
    assert (found.kv_device, found.kv_cache_tokens, found.max_model_len, found.max_concurrency) == (
        "CPU",
        2_097_152,
        2048,
        1024.0,
    )
    assert found.weights_loading_s == 0.02
    assert found.weights_gib is None  # the CPU worker does not log it
    assert not found.complete


def test_the_gpu_lines_in_vllms_own_format_are_read() -> None:
    found = parse_startup(GPU_LINES)
    assert (found.weights_gib, found.model_loading_s, found.available_kv_cache_gib) == (10.43, 44.518203, 8.21)
    assert (found.kv_device, found.kv_cache_tokens, found.max_concurrency) == ("GPU", 92_432, 2.82)
    assert found.complete
    assert len(found.lines) == 4


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def _serve(fake: FakeGoogle, entries: list[Body]) -> None:
    fake.route("POST", ENTRIES, {"entries": list(reversed(entries))})  # Cloud Logging: newest first


def _layout(fake: FakeGoogle) -> MemoryLayout:
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return memory_layout(apis, ops_stack("l4"), load_stack_file("l4"), since_s=86400, now=lambda: NOW)


def test_the_newest_start_up_is_shown_beside_the_plan_with_the_error(fake: FakeGoogle) -> None:
    """The user asks "what is the memory layout": vLLM's own numbers, the plan's, and how far off the plan is."""
    _serve(fake, [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)])
    layout = _layout(fake)
    assert layout.exit_code == 0
    assert layout.source == "gemma-l4-vllm-service-3f2a1b7-00003-q9p"
    rows = {row.quantity: row for row in layout.rows}
    assert rows["weights"].measured == 10.43
    assert rows["weights"].planned == pytest.approx(10.517, abs=0.001)
    assert rows["weights"].error == pytest.approx((10.517 - 10.43) / 10.43, abs=1e-4)
    assert rows["KV cache size"].measured == 92_432
    assert rows["KV cache size"].planned == 98_203
    assert rows["maximum concurrency at 32,768 tokens"].measured == 2.82
    query = fake.seen[-1].body["filter"]
    assert '"Available KV cache memory"' in query
    assert query == memory_query(ops_stack("l4"), NOW - datetime.timedelta(days=1))
    out = io.StringIO()
    print_layout(layout, out)
    assert "available KV cache memory (GiB)" in out.getvalue()
    assert "| (EngineCore_DP0 pid=212) INFO" in out.getvalue()


def test_an_older_revisions_lines_are_not_mixed_in(fake: FakeGoogle) -> None:
    """Two start-ups in the window: only the newest revision's lines count."""
    old = entry(
        "l4", "(EngineCore_DP0 pid=9) INFO 11-22 09:00:00 [gpu_worker.py:760] Available KV cache memory: 3.00 GiB"
    )
    old["resource"]["labels"]["revision_name"] = "gemma-l4-vllm-service-3f2a1b7-00002-abc"
    _serve(fake, [old, *[entry("l4", line, second=i + 1) for i, line in enumerate(GPU_LINES[:2])]])
    layout = _layout(fake)
    assert layout.measured.available_kv_cache_gib is None
    assert layout.measured.weights_gib == 10.43


def test_no_lines_exit_1(fake: FakeGoogle) -> None:
    _serve(fake, [])
    layout = _layout(fake)
    assert layout.exit_code == 1
    out = io.StringIO()
    print_layout(layout, out)
    assert "no vLLM start-up memory lines found" in out.getvalue()


def test_a_saved_record_calibrates_the_planner_for_that_accelerator_and_checkpoint(
    fake: FakeGoogle, tmp_path: Path
) -> None:
    """After --save, the plan's KV budget for the same settings is what vLLM found, and the preview says why."""
    _serve(fake, [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)])
    loaded = load_stack_file("l4")
    record = calibration_record(_layout(fake), loaded, now=NOW)
    path = save_record(tmp_path, record)
    assert path == record_path(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct")
    assert load_record(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct") == record
    before = loaded.capacity
    after = assess_stack(loaded.settings, root=tmp_path)
    assert before.plan is not None
    assert after.plan is not None
    assert after.plan.weight_bytes == round(10.43 * 2**30)
    assert after.plan.kv_budget_bytes / 2**30 == pytest.approx(8.21, abs=0.01)
    assert any("(measured: calibration/nvidia-l4/" in line for line in after.assumptions)
    assert not any("an estimate" in line for line in after.assumptions)
    # Another accelerator, or another checkpoint, is not calibrated by it.
    assert load_record(tmp_path, "nvidia-rtx-pro-6000", "gemma-4-12B-it-qat-w4a16-ct") is None


def test_save_refuses_a_start_up_that_did_not_log_the_weights(fake: FakeGoogle) -> None:
    """The CPU worker logs no weights line: a record from it would calibrate with a guess."""
    cpu = (FIXTURES / "vllm-0.32-cpu-startup.log").read_text(encoding="utf-8").splitlines()
    _serve(fake, [entry("l4", line, second=i) for i, line in enumerate(cpu)])
    with pytest.raises(UsageError, match="Model loading took"):
        calibration_record(_layout(fake), load_stack_file("l4"), now=NOW)


def test_a_broken_record_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = record_path(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct")
    path.parent.mkdir(parents=True)
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="not a calibration record"):
        load_record(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct")


def test_the_typed_functions_read_and_save_like_the_command(fake: FakeGoogle, tmp_path: Path) -> None:
    """Guards against a tool (no argv) reading other lines or writing another record than `verify memory --save`;
    unreadable logs are one error naming the stack."""
    _serve(fake, [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)])
    loaded = load_stack_file("l4")
    layout = read_memory(
        ops_stack("l4"), loaded, MemoryOptions(since_s=86400), open_apis=lambda: GoogleApis(tokens, api_root=fake.url)
    )
    assert layout.exit_code == 0
    assert layout.measured.weights_gib == pytest.approx(10.43)
    saved = save_calibration(layout, loaded, root=tmp_path, now=NOW)
    assert saved.path == record_path(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct")
    assert saved.shown == saved.path.relative_to(tmp_path)
    assert load_record(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct") == saved.record

    def no_credentials() -> GoogleApis:
        raise CannotCheckError("no Application Default Credentials")

    with pytest.raises(LogsUnreadableError, match="cannot read the logs of l4: no Application Default"):
        read_memory(ops_stack("l4"), loaded, MemoryOptions(), open_apis=no_credentials)
