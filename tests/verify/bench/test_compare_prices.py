"""`compare` over N runs judges prices from the project's price table, one accelerator per file.

Red team: a run whose recorded price was $0.01/h was crowned the cheapest stack; a TPU run was given
scale-to-zero costs; a file mixing two accelerators was taken as one run. Each is reproduced on the
illustrative runs of the three shipped stacks (tests/verify/bench/data/matrix).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify import UsageError
from verify.bench.compare_command import read_side
from verify.bench.matrix import Workload, judge
from verify.bench.matrix_command import load_runs
from verify.bench.matrix_report import markdown
from verify.bench.run_pricing import table_floor

DATA = Path(__file__).parent / "data" / "matrix"
SHORT = Workload("chat", 1024, 256)


def rewrite(source: Path, target: Path, **fields: object) -> Path:
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("record") == "cell":
            record.update(fields)
        lines.append(json.dumps(record))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_a_run_priced_at_a_cent_an_hour_is_not_crowned(tmp_path: Path) -> None:
    """The L4 run's file claims $0.01/h (and costs to match): below the least an L4 costs on Cloud Run in the
    table. It is priced at the table's least, the recorded figure shown beside it, and never chosen."""
    cheap = rewrite(
        DATA / "l4.jsonl", tmp_path / "l4-cheap.jsonl", price_per_hour_usd=0.01, cost_per_1m_output_tokens_usd=0.0001
    )
    runs = load_runs([cheap, DATA / "rtx6000.jsonl", DATA / "tpu-v6e.jsonl"])
    short = next(verdict for verdict in judge(runs, []) if verdict.workload == SHORT)
    assert short.cheapest is not None
    assert short.cheapest.run.label != "l4-cheap"
    l4 = next(run for run in short.runs if run.run.label == "l4-cheap")
    floor = table_floor("nvidia-l4", "cloud-run")
    assert floor is not None
    assert l4.run.price_per_hour_usd == pytest.approx(floor)
    assert l4.run.recorded_price_per_hour_usd == 0.01
    assert l4.run.price_problem is not None
    assert "below the least a nvidia-l4 costs" in l4.run.price_problem
    text = markdown(judge(runs, []), active_hours=8, slo_text="success_rate >= 1")
    assert "(recorded $0.01)" in text


def test_recorded_costs_are_recomputed_from_the_price_used(tmp_path: Path) -> None:
    """A file's own cost column cannot make it cheaper than its price and throughput say."""
    forged = rewrite(DATA / "tpu-v6e.jsonl", tmp_path / "tpu.jsonl", cost_per_1m_output_tokens_usd=0.0001)
    run = load_runs([forged])[0]
    measured = next(record for record in run.records if record.measured and record.output_throughput)
    assert measured.output_throughput is not None
    assert measured.cost_per_1m_output_tokens_usd == pytest.approx(1.35 / 3600 / measured.output_throughput * 1e6)


def test_a_tpu_run_gets_no_scale_to_zero_cost_even_if_it_says_cloud_run(tmp_path: Path) -> None:
    tpu = rewrite(DATA / "tpu-v6e.jsonl", tmp_path / "tpu-on-run.jsonl", platform="cloud-run")
    run = load_runs([tpu])[0]
    assert not run.scales_to_zero
    assert run.scaled_to_zero_monthly_usd(8) == run.always_on_monthly_usd()
    assert run.price_problem is not None
    assert "Cloud Run does not offer" in run.price_problem


def test_a_file_mixing_two_accelerators_is_refused(tmp_path: Path) -> None:
    """An L4 sweep and a TPU sweep (other concurrencies, so no cell repeats) in one file were taken as one run."""
    tpu_lines = []
    for line in (DATA / "tpu-v6e.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("record") == "cell":
            record["max_concurrency"] += 1000
        tpu_lines.append(json.dumps(record))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text((DATA / "l4.jsonl").read_text(encoding="utf-8") + "\n".join(tpu_lines) + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"more than one accelerator \(nvidia-l4, tpu-v6e\)"):
        load_runs([mixed])
    # The A-vs-B compare reads one run per side too.
    with pytest.raises(UsageError, match="more than one accelerator"):
        read_side(mixed)


def test_the_shipped_runs_keep_their_recorded_prices() -> None:
    """Consistent prices (at or above the table's least) are used as recorded: the control."""
    runs = {run.label: run for run in load_runs([DATA / "l4.jsonl", DATA / "rtx6000.jsonl", DATA / "tpu-v6e.jsonl"])}
    assert runs["l4"].price_per_hour_usd == pytest.approx(1.4209)
    assert runs["tpu-v6e"].price_per_hour_usd == pytest.approx(1.35)
    assert all(run.price_problem is None for run in runs.values())
