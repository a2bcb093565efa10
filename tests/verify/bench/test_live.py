"""Sweeps against a real vLLM server (the ``live_server`` fixture: ``make test-live``, or VERIFY_LIVE_URL).

Run against the CPU build of vLLM 0.32 with tiny-gemma already serving:
``VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma pytest tests/verify/bench -m live -n 0``
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.server import RunningServer
from verify.bench.results import load_results
from verify.cli import main

pytestmark = pytest.mark.live


def target_args(server: RunningServer) -> list[str]:
    return ["--url", server.base_url, *(["--model", server.model] if server.model else [])]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_small_sweep_against_a_real_server(live_server: RunningServer, tmp_path: Path, api: str) -> None:
    """Guards against anything the fakes cannot show: vLLM's real stream, tokenizer and usage counts."""
    output = tmp_path / "live.jsonl"
    argv = ["bench", *target_args(live_server), "--api", api, "--concurrency", "1,2", "--context", "64"]
    argv += ["--max-tokens", "8", "--requests", "4", "--warmup", "1", "--no-progress", "--output", str(output)]
    assert main(argv) == 0
    records = load_results(output).records
    assert len(records) == 2
    for record in records:
        assert record.success_rate == 1.0, record.error_examples
        # The prompt is exactly as long as asked, as the server itself counted it.
        assert record.actual_context == 64
        assert record.prompt_length_source == "tokenize"
        # ignore_eos + min_tokens: every request produced exactly max_tokens, counted from usage.
        assert record.total_output_tokens == 8 * record.completed
        assert record.mean_ttft_ms is not None
        assert record.mean_ttft_ms > 0
        assert record.vllm_version
