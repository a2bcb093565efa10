"""`verify bench --scenario needle`: long-context recall measured across the sweep, under its load.

Why: a cheaper variant, a quantised KV cache or a longer context can keep its speed and lose what sits in the
middle of a long prompt. The needle hides a passcode at a spread of depths in prompts of each --context and
records the share of answers that hold it, beside the latencies of the same cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify.bench.results import load_results
from verify.bench.samples import Sample
from verify.bench.scenarios import NEEDLE_QUESTION, hidden_codes, needle_codes, needle_recall, with_needles
from verify.cli import main
from verify.streaming import FailureKind, StreamFailure, StreamRequest, StreamResult

READS_THE_NEEDLE = r"The passcode is (\d{6})\."


def test_each_prompt_hides_its_own_passcode_at_a_spread_of_depths_after_its_unique_prefix() -> None:
    """Guards against a needle always at the same depth (recall at one place is not recall), or one placed
    before the unique prefix (prompts would share a cached prefix and measure the cache, not the model)."""
    prompts = [f"a b {index} " + " ".join(["word"] * 97) for index in range(8)]
    codes = needle_codes(8, seed="run-1")
    hidden = with_needles(prompts, codes, keep_words=3)
    assert len(set(codes)) == 8
    assert needle_codes(8, seed="run-1") == codes
    assert all(code.isdigit() and len(code) == 6 for code in codes)
    depths = []
    for index, (text, code) in enumerate(zip(hidden, codes, strict=True)):
        assert text.startswith(f"a b {index} ")
        assert text.endswith(NEEDLE_QUESTION)
        words = text.split(" ")
        depths.append(words.index("passcode") / len(words))
        assert f"The passcode is {code}." in text
    assert min(depths) < 0.1
    assert max(depths) > 0.7
    assert len({round(depth, 1) for depth in depths}) >= 6


def _result(text: str, *, ok: bool = True) -> StreamResult:
    failure = None if ok else StreamFailure(FailureKind.HTTP_STATUS, "503", 503)
    return StreamResult(
        ttft_s=0.1, itl_s=(), e2el_s=0.2, output_tokens=3, prompt_tokens=300, finish_reason="length", text=text,
        content_chunks=1, failure=failure,
    )  # fmt: skip


def test_recall_counts_completed_answers_holding_their_own_passcode() -> None:
    """Guards against failed requests counted as misses (they are failures, already counted), against a recall
    computed from the wrong codes, and against an answer credited for another prompt's passcode, or for listing
    every passcode it has seen."""
    requests = [StreamRequest("m", f"x The passcode is {code}. y", 8) for code in ("123456", "654321", "111111")]
    codes = hidden_codes(requests)
    assert codes == ["123456", "654321", "111111"]
    answers = [
        Sample(0.0, _result(" 123456"), 0),
        Sample(0.1, _result(" 123456"), 1),  # the previous prompt's passcode
        Sample(0.2, _result(" 111111 654321 123456"), 2),  # every passcode it has seen
        Sample(0.3, _result("", ok=False), 2),
    ]
    assert needle_recall(answers, codes) == pytest.approx(1 / 3)
    assert needle_recall([Sample(0.0, _result(" 123456"))], codes) == 0.0  # which prompt it answers is unknown
    assert needle_recall([Sample(0.0, _result("", ok=False), 0)], codes) is None


@pytest.mark.parametrize(
    ("reads", "lag", "recall"), [(READS_THE_NEEDLE, 0, 1.0), (None, 0, 0.0), (READS_THE_NEEDLE, 1, 0.0)]
)
def test_the_sweep_records_recall_per_cell(tmp_path: Path, reads: str | None, lag: int, recall: float) -> None:
    """Guards against a needle run that only times requests: a model that finds every passcode scores 100%,
    one that ignores the prompt 0%, in the JSONL and the Markdown report; and a server answering each prompt
    with the previous prompt's passcode, which scored 92% when any hidden passcode counted, scores 0%."""
    output = tmp_path / "needle.jsonl"
    config = FakeVllmConfig(
        count_prompt_words=True, chat_template_tokens=3, answer_from_prompt=reads, answer_lags_by=lag
    )
    with running(config) as server:
        code = main(
            ["bench", "--url", server.url, "--model", "tiny-gemma", "--scenario", "needle", "--context", "256,512",
             "--concurrency", "1,2", "--requests", "6", "--warmup", "1", "--max-tokens", "8", "--no-progress",
             "--output", str(output), "--allow-untrusted"]
        )  # fmt: skip
        prompts = [
            seen.body["messages"][-1]["content"]
            for seen in server.requests
            if seen.path == "/v1/chat/completions" and isinstance(seen.body, dict)
        ]
    assert code == 0
    records = load_results(output).records
    assert [record.needle_recall for record in records] == [recall] * 4
    assert all(record.scenario and record.scenario.startswith("needle") for record in records)
    assert all(abs((record.actual_context or 0) - record.requested_context) <= 8 for record in records)
    hidden = [prompt for prompt in prompts if "The passcode is" in prompt]
    assert len(hidden) == 4 * 7  # every measured and warm-up request hides one
    assert len(set(hidden)) == len(hidden)
    assert "Needle recall" in output.with_suffix(".md").read_text()


def test_a_context_too_short_for_a_haystack_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a "needle" in a prompt that is mostly the question."""
    code = main(
        ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--scenario", "needle", "--context", "128",
         "--output", str(tmp_path / "r.jsonl")]
    )  # fmt: skip
    assert code == 2
    assert "at least 256 tokens" in capsys.readouterr().err
