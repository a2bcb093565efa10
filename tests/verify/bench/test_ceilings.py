"""Physical ceilings for the model and accelerator a cell claims: a decode rate memory bandwidth cannot deliver is
flagged by the bench and left out of every verdict by `compare` and the N-way matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.planner import KvLayout
from serving.shapes import shapes_table
from tests.serving.planted_shapes import PLANTED_TPU, plant
from verify.bench.caveats import trusted, untrusted_reason
from verify.bench.ceilings import ceiling_problem, decode_ceiling_of, kv_layout
from verify.bench.compare import Verdict, compare, tally
from verify.bench.judgement import accelerator_facts
from verify.bench.matrix import Cell, Run
from verify.bench.metrics import cell_metrics
from verify.bench.prompts import PromptLengthSource, PromptShape
from verify.bench.results import CellRecord, append_record, load_results
from verify.bench.server_metrics import draft_tokens_per_step
from verify.bench.sweep import Endpoint, SweepPlan, measured_record
from verify.cli import main
from verify.prom import VllmMetrics
from verify.streaming import StreamResult

DATA = Path(__file__).parent / "data"
REQUESTS, OUTPUT, TTFT_S, TPOT_S = 32, 128, 0.044, 0.048


def physical_12b_on_l4() -> CellRecord:
    """One user on a 12B QAT behind one L4, measured by a stack without speculative decoding: 48 ms a token
    (21 tokens/s, under the ~27 that 300 GB/s over 11.3 GB of weights allows)."""
    base = load_results(DATA / "l4-mtp-off.jsonl").records[0]
    e2el = TTFT_S + (OUTPUT - 1) * TPOT_S
    duration = REQUESTS * e2el
    return base.model_copy(
        update={
            "model": "gemma-4-12b-it",
            "duration": duration,
            "request_throughput": REQUESTS / duration,
            "output_throughput": REQUESTS * OUTPUT / duration,
            "total_token_throughput": (base.total_input_tokens + REQUESTS * OUTPUT) / duration,
            "mean_tpot_ms": TPOT_S * 1000,
            "median_tpot_ms": TPOT_S * 1000,
            "p99_tpot_ms": TPOT_S * 1000 * 1.3,
            "mean_e2el_ms": e2el * 1000,
            "median_e2el_ms": e2el * 1000,
            "p95_e2el_ms": e2el * 1000 * 1.02,
            "p99_e2el_ms": e2el * 1000 * 1.04,
            "accelerator_count": 1,
            "speculative_tokens": 0,
        }
    )


def test_bench_flags_a_decode_rate_above_the_bandwidth_ceiling(tmp_path: Path) -> None:
    """A 12B on an L4 recorded at 218 tokens/s for one user: the L4 reads ~11 GB of weights per token at 300 GB/s,
    so no serving trick reaches that. The compute ceiling alone did not catch it (the prompt is short)."""
    plan = SweepPlan(model="gemma-4-12b-it", contexts=(128,), concurrencies=(1,), max_tokens=256)
    endpoint = Endpoint(
        base_url="http://127.0.0.1:1",
        accelerator=accelerator_facts("nvidia-l4"),
        model_params=12e9,
        speculative_tokens=0,
    )
    e2el = 0.1 + 255 / 218
    answers = [StreamResult(0.1, (), e2el, 256, 128, "length", "x", 256) for _ in range(8)]
    shape = PromptShape(requested=128, body_words=100, pad_letters=0, measured=128, source=PromptLengthSource.TOKENIZE)
    record = measured_record(
        plan, endpoint, context=128, concurrency=1, metrics=cell_metrics(answers, duration_s=8 * e2el), shape=shape
    )
    assert record.exceeds_ceiling
    assert record.ceiling_stream_tokens_per_s is not None
    assert 20 < record.ceiling_stream_tokens_per_s < 40
    warning = next(w for w in record.warnings if "bandwidth ceiling" in w)
    assert warning.startswith("218 tokens/s a stream is above the bandwidth ceiling")
    assert not trusted(record)
    path = tmp_path / "cells.jsonl"
    append_record(path, record)
    assert load_results(path).records[0].exceeds_ceiling, "the flag survives the file's own consistency checks"


def test_a_physical_cell_stays_trusted() -> None:
    """The ceiling must not cry wolf: a real 12B-on-L4 rate is within it."""
    cell = physical_12b_on_l4()
    assert ceiling_problem(cell) is None
    assert trusted(cell)
    ceiling = decode_ceiling_of(cell)
    assert ceiling is not None
    assert ceiling.per_stream > 1000 / TPOT_S / 1000


def test_speculative_decoding_is_allowed_only_where_the_record_shows_it() -> None:
    """Red team: a file that did not say whether MTP was on was given the default drafter's five tokens a step,
    every one accepted, so a stack without MTP passed a ceiling five times too high. Speculation is allowed only
    where the record shows it (the stack's --speculative-config, or the server's counters during the cell)."""
    fast = physical_12b_on_l4().model_copy(update={"speculative_tokens": None, "mean_tpot_ms": 15.0})
    assert ceiling_problem(fast) is not None
    assert ceiling_problem(fast.model_copy(update={"speculative_tokens": 0})) is not None
    shown = fast.model_copy(update={"speculative_tokens": 4})
    assert ceiling_problem(shown) is None
    ceiling = decode_ceiling_of(shown)
    assert ceiling is not None
    assert "up to 5 tokens a step with speculative decoding" in ceiling.basis


def test_a_served_name_outside_the_catalog_is_judged_by_the_size_it_states() -> None:
    """Red team: `bench --accelerator nvidia-l4 --model-params 12B` against a server whose served name is no catalog
    id recorded 499 tok/s for one user with no ceiling at all. The stated size is a claim: the catalog's model of
    that size, or (a size the catalog lacks) a dense model of that many parameters at 4 bits a weight."""
    cell = physical_12b_on_l4().model_copy(update={"model": "my-finetune", "mean_tpot_ms": 2.0})
    assert ceiling_problem(cell) is None  # no name, no size: nothing is claimed
    twelve = cell.model_copy(update={"model_params": 12e9})
    reason = ceiling_problem(twelve)
    assert reason is not None
    assert "500 tokens/s a stream" in reason
    assert "gemma-4-12b-it on 1 x nvidia-l4" in reason
    unlisted = cell.model_copy(update={"model_params": 20e9})
    reason = ceiling_problem(unlisted)
    assert reason is not None
    assert "a 20B-parameter model" in reason
    assert (
        ceiling_problem(physical_12b_on_l4().model_copy(update={"model": "my-finetune", "model_params": 12e9})) is None
    )


def test_a_claimed_model_that_cannot_fit_the_claimed_accelerator_is_refused() -> None:
    """No variant of the 31B fits one L4 with room for a 4K prompt, and a 70B-parameter model is 35 GB of weights
    at 4 bits: whatever their rates, such cells cannot be what they claim."""
    cell = physical_12b_on_l4().model_copy(
        update={"model": "gemma-4-31b-it", "requested_context": 4096, "actual_context": 4096.0}
    )
    reason = ceiling_problem(cell)
    assert reason is not None
    assert "cannot serve at all: no variant of gemma-4-31b-it fits 1 x nvidia-l4" in reason
    huge = physical_12b_on_l4().model_copy(update={"model": "my-70b", "model_params": 70e9})
    reason = ceiling_problem(huge)
    assert reason is not None
    assert "35.0 GB of weights" in reason


def relabelled(cell: CellRecord) -> CellRecord:
    """The copied row of the write-ups: a 12B-on-L4 file whose model was renamed to the 31B."""
    return cell.model_copy(update={"model": "gemma-4-31b-it"})


def test_a_relabelled_file_is_flagged_and_left_out_of_compares_verdict() -> None:
    """One write-up's 31B-on-L4 row was its 12B row copied. A 31B reads ~20 GB a token; one L4 cannot stream it at
    the 12B's 21 tokens/s, so the relabelled side is untrusted and no verdict is drawn from it."""
    a = physical_12b_on_l4()
    b = relabelled(a.model_copy(update={"median_ttft_ms": 30.0}))
    reason = untrusted_reason(b)
    assert reason is not None
    assert "above its physical ceiling" in reason
    assert "gemma-4-31b-it" in reason
    rows = compare([a], [b])
    verdicts = {delta.verdict for row in rows for delta in row.deltas if delta.verdict is not None}
    assert verdicts == {Verdict.UNTRUSTED}
    assert "not judged (untrusted)" in tally(rows)
    shown = compare([a], [b], allow_untrusted=True)
    assert all(delta.would_be for row in shown for delta in row.deltas if delta.verdict is not None)


def test_compare_cli_names_the_ceiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The user sees why the relabelled side is not judged, in the command's own output."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_record(a, physical_12b_on_l4())
    append_record(b, relabelled(physical_12b_on_l4()))
    assert main(["compare", str(a), str(b), "--allow-mismatch"]) in {0, 1}
    out = capsys.readouterr().out
    assert "above its physical ceiling" in out


def test_the_n_way_matrix_never_chooses_a_cell_over_its_ceiling(tmp_path: Path) -> None:
    """`bench matrix` picks each run's cheapest cell meeting the SLO: never one that cannot be what it claims."""
    cell = relabelled(physical_12b_on_l4())
    chosen = Cell(Run("relabelled", tmp_path / "r.jsonl", (cell,)), cell, ())
    assert not chosen.eligible
    assert "physical ceiling" in chosen.mark


def physical_64_users_12b_on_l4() -> CellRecord:
    """64 users of a 12B on one L4 at 1,024 prompt tokens, 600 output tokens/s: within the ~800 that reading the
    weights and 52 sequences' KV allows without speculative decoding (the stack had none)."""
    base = next(
        record
        for record in load_results(DATA / "matrix" / "l4.jsonl").records
        if record.max_concurrency == 64 and record.requested_context == 1024
    )
    duration = base.total_output_tokens / 600.0
    return base.model_copy(
        update={
            "duration": duration,
            "request_throughput": base.completed / duration,
            "output_throughput": 600.0,
            "total_token_throughput": (base.total_input_tokens + base.total_output_tokens) / duration,
            "speculative_tokens": None,
        }
    )


def test_a_relabelled_64_user_cell_is_left_out_of_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Red team: a 12B-on-L4 file relabelled as the 31B still had its 64-user cell accepted by `compare` (five
    speculative tokens allowed, and no question whether a 31B fits an L4). The 31B on one L4 holds three 1K-token
    sequences at once: 600 tokens/s cannot be it, and the cell is not judged."""
    twelve = physical_64_users_12b_on_l4()
    assert ceiling_problem(twelve) is None
    thirty_one = relabelled(twelve)
    reason = ceiling_problem(thirty_one)
    assert reason is not None
    assert "3 sequences of 1,024 tokens at once in its KV cache" in reason
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_record(a, twelve)
    append_record(b, thirty_one)
    assert main(["compare", str(a), str(b), "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "not judged (untrusted) in 5" in out
    assert "gemma-4-31b-it on 1 x nvidia-l4" in out


def _scrape(drafts: float | None, draft_tokens: float | None) -> VllmMetrics:
    return VllmMetrics(
        model_names=("m",), running=0.0, waiting=0.0, kv_cache_usage=0.0, prefix_cache_queries=0.0,
        prefix_cache_hits=0.0, preemptions=0.0, prompt_tokens=0.0, generation_tokens=0.0,
        spec_decode_drafts=drafts, spec_decode_draft_tokens=draft_tokens, spec_decode_accepted_tokens=draft_tokens,
    )  # fmt: skip


def test_a_url_only_run_records_the_speculation_its_servers_counters_show() -> None:
    """`bench --url` knows no stack's --speculative-config, and the ceiling allows speculation only where the record
    shows it: the server's own counters during the cell say how many draft tokens each step proposed (vLLM registers
    them only with a speculative config, so their absence is none)."""
    assert draft_tokens_per_step(_scrape(100, 300), _scrape(150, 450)) == 3
    assert draft_tokens_per_step(_scrape(None, None), _scrape(None, None)) == 0
    assert draft_tokens_per_step(_scrape(100, 300), _scrape(100, 300)) == 0  # no draft during the cell
    assert draft_tokens_per_step(None, _scrape(150, 450)) is None  # unreadable: not known, so none allowed


def test_bench_judges_a_served_name_outside_the_catalog_by_the_size_given(tmp_path: Path) -> None:
    """Red team: `bench --accelerator nvidia-l4 --model-params 12B` against a served name that is no catalog id
    recorded 499 tok/s for one user with no ceiling at all. The run records the size it was told and judges it."""
    from tests.fake_vllm import FakeVllmConfig
    from tests.verify.bench.test_cli import running

    output = tmp_path / "custom.jsonl"
    config = FakeVllmConfig(
        served_name="acme-assistant", count_prompt_words=True, pieces=tuple(f" w{i}" for i in range(32))
    )
    with running(config) as server:
        main(
            ["bench", "--url", server.url, "--model", "acme-assistant", "--accelerator", "nvidia-l4",
             "--model-params", "12B", "--concurrency", "1", "--context", "64", "--max-tokens", "32",
             "--requests", "3", "--warmup", "0", "--no-progress", "--output", str(output)]
        )  # fmt: skip
    (record,) = load_results(output).records
    assert record.model_params == 12e9
    assert record.speculative_tokens == 0  # the server's counters show no speculative decoding
    assert record.exceeds_ceiling
    assert record.ceiling_stream_tokens_per_s is not None
    assert record.ceiling_stream_tokens_per_s < 40
    assert not trusted(record)
    assert any("gemma-4-12b-it on 1 x nvidia-l4" in warning for warning in record.warnings)


def test_bench_records_the_speculation_it_is_told(tmp_path: Path) -> None:
    """`--speculative-tokens N` states what a `--url` run cannot read from a stack; the record keeps it and its
    ceiling allows that many draft tokens a step."""
    from tests.fake_vllm import FakeVllmConfig
    from tests.verify.bench.test_cli import running

    output = tmp_path / "mtp.jsonl"
    with running(FakeVllmConfig(served_name="gemma-4-12b-it", count_prompt_words=True)) as server:
        main(
            ["bench", "--url", server.url, "--accelerator", "nvidia-l4", "--speculative-tokens", "4",
             "--concurrency", "1", "--context", "64", "--max-tokens", "5", "--requests", "2", "--warmup", "0",
             "--no-progress", "--output", str(output)]
        )  # fmt: skip
    (record,) = load_results(output).records
    assert record.speculative_tokens == 4
    ceiling = decode_ceiling_of(record)
    assert ceiling is not None
    assert "up to 5 tokens a step" in ceiling.basis


def test_every_tpu_generation_gets_the_tpu_kv_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TPU generation other than today's must be judged with the TPU's KV layout: a check on one generation's
    name gave any other TPU the GPU layout, a wrong ceiling for every cell it served."""
    plant(monkeypatch)
    assert kv_layout(PLANTED_TPU) is KvLayout.TPU
    gpu = next(key for key, facts in shapes_table().accelerators.items() if facts.family == "gpu")
    assert kv_layout(gpu) is KvLayout.VLLM_HYBRID
