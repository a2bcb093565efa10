"""Reports and comparisons rendered from fixed results files (tests/verify/bench/data/*.jsonl)."""

from __future__ import annotations

from pathlib import Path

from verify.bench.judgement import AcceleratorFacts
from verify.bench.metrics import cell_metrics
from verify.bench.prompts import PromptLengthSource, PromptShape
from verify.bench.report import CSV_COLUMNS, csv_text, markdown_report, write_reports
from verify.bench.results import CellRecord, append_record, done_keys, load_results
from verify.bench.server_metrics import summary_markdown
from verify.bench.sweep import Endpoint, SweepPlan, measured_record
from verify.prom import VllmMetrics
from verify.streaming import StreamResult

DATA = Path(__file__).parent / "data"
MTP_OFF = DATA / "l4-mtp-off.jsonl"
MTP_ON = DATA / "l4-mtp-on.jsonl"


def records(path: Path) -> list[CellRecord]:
    loaded = load_results(path)
    assert loaded.unreadable_lines == []
    return loaded.records


def test_csv_keeps_the_hand_made_sweeps_columns() -> None:
    """Guards against breaking the spreadsheets built on the old sweeps' CSV (columns, order), and against
    latency columns a reader cannot tell seconds from milliseconds in."""
    lines = csv_text(records(MTP_OFF)).splitlines()
    assert lines[0].startswith(",".join(CSV_COLUMNS) + ",")
    assert lines[0].startswith(
        "context_size,concurrency,success_rate,avg_latency_s,p95_latency_s,req_per_sec,tokens_per_sec,"
    )
    # Sorted by context then concurrency; latencies in seconds; skipped cells have no row.
    assert [",".join(line.split(",")[: len(CSV_COLUMNS)]) for line in lines[1:]] == [
        "128,1,1,1.95,2,0.5,64",
        "128,128,0.875,6,7,20,2560",
        "8192,1,1,3,3.1,0.3,38.4",
    ]


def test_csv_has_every_percentile_but_none_from_too_few_requests() -> None:
    """Guards against a capacity review reading a p95 the CSV does not have, or a p99 made of 64 requests."""
    header, *rows = csv_text(records(MTP_OFF)).splitlines()
    columns = header.split(",")
    for column in ("median_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms", "p95_e2el_ms_ci_low"):
        assert column in columns
    single = dict(zip(columns, rows[0].split(","), strict=True))  # 128 x 1: 32 completed
    assert single["median_e2el_ms"] != ""
    assert single["p90_e2el_ms"] == single["p95_e2el_ms"] == single["p99_e2el_ms"] == ""  # 32 < 36, 72, 368
    busy = dict(zip(columns, rows[1].split(","), strict=True))  # 128 x 128: 448 completed
    assert busy["p99_e2el_ms"] == "8000"


def test_markdown_has_the_matrices_and_explains_marks_and_skips() -> None:
    """Guards against a report that hides skipped cells, platform-limit failures or the failure mix."""
    report = markdown_report(records(MTP_OFF))
    assert "### Request throughput (req/s)" in report
    assert "| context \\ concurrency | 1 | 128 |" in report
    assert "| 128 | 0.5 | 20†⚠ |" in report
    assert "| 8192 | 0.3 |  |" in report
    assert "| 16384 | skipped |  |" in report
    assert "### Median TTFT (ms)" in report
    assert "### P95 E2EL (ms) [95% CI]" in report
    assert "### P99 E2EL (ms) [95% CI]" in report
    assert "| 128 | n<368 | 8,000†⚠ |" in report
    assert "| 128 | 100.0% | 87.5%†⚠ |" in report
    assert "64 failed (http_429 64)" in report
    assert "skipped (prompt 16384 + max tokens 128 exceeds the server's max_model_len 16384)" in report
    assert "Cost per 1M output tokens (USD, at $1.05/hour)" in report
    basis = "1 x Cloud Run L4 instance, 8 vCPU, 32 GiB"
    priced = markdown_report([r.model_copy(update={"price_basis": basis}) for r in records(MTP_OFF)])
    assert f"Cost basis: {basis}." in priced


def test_markdown_says_what_was_measured_where_and_when() -> None:
    """Guards against a report that, copied into a ticket, no longer says which deployment, day and workload
    its numbers belong to."""
    report = markdown_report(records(MTP_OFF))
    assert report.startswith("# Benchmark report: gemma-4-e4b-it at https://gemma-l4.example.run.app\n")
    assert "- date: 2026-11-22 10:00 UTC" in report
    assert "chat API, 128 output tokens per request, 32-512 requests per cell" in report
    assert "context 128, 8192, 16384 tokens x concurrency 1, 128" in report


def test_large_numbers_read_at_a_glance_in_the_report_and_csv() -> None:
    """Guards against ``1.693e+04`` in the tables a person reads after a rollout (and in the CSV)."""
    fast = records(MTP_OFF)[1].model_copy(
        update={"output_throughput": 16934.37, "request_throughput": 132.3, "p99_e2el_ms": 123456.7}
    )
    report = markdown_report([fast])
    # 16,934 output tokens/s is above what a 12B on one L4 can decode: the cell is marked untrusted (?).
    assert "| 128 | 16,934†? |" in report
    assert "| 128 | 132†? |" in report
    assert "| 128 | 123,457†? |" in report
    assert "e+" not in report
    row = csv_text([fast]).splitlines()[1]
    assert ",".join(row.split(",")[:7]).endswith(",132.3,16934.4")
    assert "e+" not in row


def test_untrusted_cells_are_marked_and_explained_once() -> None:
    """Guards against a cell the sweep marked untrusted reading like any other in the report, or its reason
    (which the sweep also records among the warnings) listed twice."""
    reason = "untrusted: the load generator ran out of CPU"
    doubtful = records(MTP_OFF)[0].model_copy(
        update={"trusted": False, "untrusted_reason": reason, "warnings": [reason]}
    )
    report = markdown_report([doubtful])
    assert "| 128 | 0.5? |" in report
    assert report.count(reason) == 1
    bare = records(MTP_OFF)[0].model_copy(update={"trusted": False})
    assert "- context 128 x concurrency 1: untrusted: the sweep marked this cell untrusted" in markdown_report([bare])
    warned = records(MTP_OFF)[0].model_copy(update={"warnings": ["the load generator stalled for 200 ms"]})
    assert "| 128 | 0.5⚠ |" in markdown_report([warned])


def test_write_reports_puts_all_three_beside_the_results(tmp_path: Path) -> None:
    """Guards against reports landing somewhere the user will not look."""
    written = write_reports(records(MTP_OFF), tmp_path / "run")
    assert sorted(p.name for p in written) == ["run.csv", "run.md", "run.png"]


def test_resume_keys_and_a_cut_last_line(tmp_path: Path) -> None:
    """Guards against a run killed mid-write making the file unreadable or the next line glued to it."""
    path = tmp_path / "r.jsonl"
    first, second = records(MTP_OFF)[:2]
    append_record(path, first)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"record": "cell", "status": "meas')  # what a kill mid-write leaves
    append_record(path, second)
    loaded = load_results(path)
    assert loaded.unreadable_lines == [2]
    assert done_keys(loaded.records) == {first.key, second.key}


def test_server_metrics_summary_reads_at_a_glance() -> None:
    """Guards against the /metrics table printing a long sweep's 1,234,567 prompt tokens as 1.23457e+06."""
    quiet = dict.fromkeys(VllmMetrics.model_fields, None) | {"model_names": ("m",)}
    before = VllmMetrics.model_validate(quiet | {"prompt_tokens": 1000.0, "generation_tokens": 0.0})
    after = VllmMetrics.model_validate(quiet | {"prompt_tokens": 1_235_567.0, "generation_tokens": 16_384.0})
    summary = summary_markdown(before, after) or ""
    assert "| prompt tokens processed | 1,234,567 |" in summary
    assert "| generation tokens | 16,384 |" in summary
    assert "e+" not in summary


def test_physical_ceiling_warning_reads_at_a_glance() -> None:
    """Guards against the warning that a cell's rate cannot be true printing its figures as 1e+05 req/s."""
    plan = SweepPlan(model="m", contexts=(10,), concurrencies=(1,), max_tokens=5)
    endpoint = Endpoint(base_url="http://127.0.0.1:1", accelerator=AcceleratorFacts("x", 1e12, None), model_params=1e6)
    answers = [StreamResult(0.0001, (), 0.0001, 5, 10, "length", "x", 1) for _ in range(10)]
    shape = PromptShape(requested=10, body_words=4, pad_letters=0, measured=10, source=PromptLengthSource.TOKENIZE)
    record = measured_record(
        plan, endpoint, context=10, concurrency=1, metrics=cell_metrics(answers, duration_s=0.0001), shape=shape
    )
    assert record.exceeds_ceiling
    assert record.warnings[-1].startswith("100,000 req/s is above the physical ceiling of 33,333 req/s")
