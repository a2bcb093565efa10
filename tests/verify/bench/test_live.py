"""A tiny sweep against a real vLLM server, when ``VERIFY_LIVE_URL`` names one (skipped otherwise).

Run against the CPU build of vLLM 0.32 with tiny-gemma:
``VERIFY_LIVE_URL=http://127.0.0.1:8000 VERIFY_LIVE_MODEL=tiny-gemma pytest tests/verify/bench -m live``
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verify.bench.results import load_results
from verify.cli import main

LIVE_URL = os.environ.get("VERIFY_LIVE_URL")
LIVE_MODEL = os.environ.get("VERIFY_LIVE_MODEL")

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not LIVE_URL, reason="set VERIFY_LIVE_URL to a vLLM server to run the live bench test"),
]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_small_sweep_against_a_real_server(tmp_path: Path, api: str) -> None:
    """Guards against anything the fakes cannot show: vLLM's real stream, tokenizer and usage counts."""
    assert LIVE_URL is not None
    output = tmp_path / "live.jsonl"
    argv = ["bench", "--url", LIVE_URL, "--api", api, "--concurrency", "1,2", "--context", "64"]
    argv += ["--max-tokens", "8", "--requests", "4", "--warmup", "1", "--no-progress", "--output", str(output)]
    if LIVE_MODEL:
        argv += ["--model", LIVE_MODEL]
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
