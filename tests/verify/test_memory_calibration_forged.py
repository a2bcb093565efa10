"""`verify memory --save` writes a calibration record only from the stack's own, plausible start-up lines.

Red team: a forged startup line ("Model loading took 0.5 GiB ...", from a logged prompt, a job, or an entry
written with another revision's label) was stored as the calibration the planner then trusts, so a stack
vLLM cannot start previewed as fitting. Each forgery is reproduced on the real L4 start-up's lines and
refused with nothing written; the genuine lines still save, with their source recorded.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote.google_client import GoogleApis
from stacks.calibration import record_path
from tests.verify.ops.google_fake import Body, FakeGoogle, tokens
from tests.verify.ops.scenarios import ops_stack
from tests.verify.ops.test_logs import ENTRIES, entry
from verify import UsageError
from verify.memory.layout import MemoryLayout, memory_layout, source_problem
from verify.memory.run import save_calibration
from verify.memory.startup import parse_startup
from verify.ops.logs import LogEntry
from verify.ops.stack import GkeOpsStack
from verify.stack_settings import load_stack_file

FIXTURES = Path(__file__).parent / "fixtures"
GPU_LINES = (FIXTURES / "vllm-0.32-gpu-startup-l4.log").read_text(encoding="utf-8").splitlines()
NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)
PREFIX = "(EngineCore_DP0 pid=212) INFO 11-23 10:58:03 "


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def layout_of(fake: FakeGoogle, entries: list[Body]) -> MemoryLayout:
    fake.route("POST", ENTRIES, {"entries": list(reversed(entries))})
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return memory_layout(apis, ops_stack("l4"), load_stack_file("l4"), since_s=86400, now=lambda: NOW)


def genuine() -> list[Body]:
    return [entry("l4", line, second=i) for i, line in enumerate(GPU_LINES)]


def refused(fake: FakeGoogle, entries: list[Body], tmp_path: Path, match: str) -> None:
    layout = layout_of(fake, entries)
    with pytest.raises(UsageError, match=match):
        save_calibration(layout, load_stack_file("l4"), root=tmp_path, now=NOW)
    assert not record_path(tmp_path, "nvidia-l4", "gemma-4-12B-it-qat-w4a16-ct").exists()


def test_the_genuine_lines_save_with_their_source(fake: FakeGoogle, tmp_path: Path) -> None:
    """The control: the real start-up saves, and the record says which revision, when, and which lines."""
    saved = save_calibration(layout_of(fake, genuine()), load_stack_file("l4"), root=tmp_path, now=NOW)
    assert saved.record.source_revision == "gemma-l4-vllm-service-3f2a1b7-00003-q9p"
    assert saved.record.source_first_line_at == "2026-11-23T11:00:00.000000Z"
    assert any("Model loading took 10.43 GiB" in line for line in saved.record.source_lines)


def test_a_figure_inside_a_logged_prompt_is_not_read(fake: FakeGoogle, tmp_path: Path) -> None:
    """vLLM logs prompts (--enable-log-requests): the words inside one are not vLLM's own line for them."""
    prompt = (
        f"{PREFIX}[logger.py:41] Received request chatcmpl-1: prompt: 'Model loading took 0.50 GiB memory and "
        "1.0 seconds'"
    )
    entries = [*genuine(), entry("l4", prompt, second=30)]
    layout = layout_of(fake, entries)
    assert layout.measured.weights_gib == pytest.approx(10.43)
    assert layout.measured.unattributed == [prompt]
    refused(fake, entries, tmp_path, "outside vLLM's own log lines")


def test_implausibly_small_weights_are_refused(fake: FakeGoogle, tmp_path: Path) -> None:
    """A well-formed line claiming 0.5 GiB for a 10.5 GiB checkpoint would let a 31B 'fit' an L4."""
    forged = [line.replace("10.43 GiB", "0.50 GiB") for line in GPU_LINES]
    refused(
        fake,
        [entry("l4", line, second=i) for i, line in enumerate(forged)],
        tmp_path,
        r"weights 0\.5 GiB against the catalog's 10\.52 GiB",
    )


def test_kv_memory_beyond_the_accelerator_is_refused(fake: FakeGoogle, tmp_path: Path) -> None:
    forged = [
        line.replace("Available KV cache memory: 8.21 GiB", "Available KV cache memory: 80.00 GiB")
        for line in GPU_LINES
    ]
    refused(fake, [entry("l4", line, second=i) for i, line in enumerate(forged)], tmp_path, "exceed the")


def test_lines_of_another_context_length_are_refused(fake: FakeGoogle, tmp_path: Path) -> None:
    """A KV line for another maxModelLen is another configuration's start-up, not this stack's."""
    forged = [line.replace("for 32,768 tokens", "for 4,096 tokens") for line in GPU_LINES]
    refused(fake, [entry("l4", line, second=i) for i, line in enumerate(forged)], tmp_path, "maxModelLen is 32,768")


def test_lines_of_a_job_or_another_service_are_refused(fake: FakeGoogle, tmp_path: Path) -> None:
    """An entry written with another service's revision label (anyone with logging write can) is not ours."""
    entries = genuine()
    for item in entries:
        item["resource"]["labels"]["revision_name"] = "someone-elses-service-00001-abc"
    refused(fake, entries, tmp_path, "not a revision of the stack's service")


def test_parse_reads_figures_only_from_the_file_that_logs_them() -> None:
    """The same words with vLLM's prefix but from another file (a model's own logger) are not the figure."""
    found = parse_startup([*GPU_LINES, f"{PREFIX}[my_model.py:12] Available KV cache memory: 999.00 GiB"])
    assert found.available_kv_cache_gib == pytest.approx(8.21)
    assert len(found.unattributed) == 1


def test_gke_lines_must_come_from_the_stacks_cluster_and_namespace() -> None:
    """On GKE the filter also matches the import jobs; a line labelled with another cluster is not ours."""
    stack = ops_stack("gke-l4x4")
    assert isinstance(stack, GkeOpsStack)

    def container(cluster: str) -> LogEntry:
        return LogEntry.model_validate(
            {
                "textPayload": GPU_LINES[1],
                "resource": {
                    "type": "k8s_container",
                    "labels": {"cluster_name": cluster, "namespace_name": stack.namespace, "container_name": "vllm"},
                },
            }
        )

    assert source_problem(stack, [container(stack.cluster)], "vllm") is None
    assert "not from a container of" in str(source_problem(stack, [container("someone-else")], "vllm"))
