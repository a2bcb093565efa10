"""The comparison script's rules: which runs are compared, how CPUs are named, the machine watch."""

from __future__ import annotations

import pytest

from benchmarks.compare_with_vllm_bench import CellRuns, Figures, MachineWatch, _table, parse_cpus


def figures(req_s: float, stall_ms: float | None) -> Figures:
    return Figures(
        request_throughput=req_s,
        mean_ttft_ms=1000.0 / req_s,
        mean_tpot_ms=2.0,
        total_input_tokens=128,
        completed=4,
        failed=0,
        machine_max_stall_ms=stall_ms,
    )


def test_only_undisturbed_runs_are_compared_when_both_tools_have_them() -> None:
    """Guards against a run measured during a machine stall (a third of the real throughput) deciding
    the comparison."""
    cell = CellRuns(
        context=128,
        concurrency=8,
        ours=[figures(60.0, 3.0), figures(20.0, 400.0), figures(62.0, 4.0)],
        vllm=[figures(61.0, 2.0), figures(25.0, 500.0), figures(63.0, 5.0)],
    )
    (row,) = _table([cell], max_stall_ms=30.0)[2:]
    assert "61 / 62 (-1.6%)" in row  # medians of 60, 62 and of 61, 63
    assert "2 of 3 / 2 of 3" in row
    assert ">10%" not in row.split("|")[3]


def test_when_a_side_has_no_undisturbed_run_both_sides_use_every_run_and_say_so() -> None:
    """Guards against comparing one tool's clean runs with the other's disturbed ones."""
    cell = CellRuns(
        context=128,
        concurrency=8,
        ours=[figures(20.0, 400.0), figures(22.0, 300.0)],
        vllm=[figures(90.0, 3.0), figures(30.0, 500.0)],
    )
    (row,) = _table([cell], max_stall_ms=30.0)[2:]
    assert "21 / 60 " in row  # every run on both sides
    assert "0 of 2 / 1 of 2 (a side had no undisturbed run: all runs compared)" in row


def test_a_run_without_a_watch_is_never_undisturbed() -> None:
    assert not figures(50.0, None).clean(30.0)
    assert figures(50.0, 30.0).clean(30.0)


@pytest.mark.parametrize(("text", "cpus"), [("1", {1}), ("0,2", {0, 2}), ("2-3", {2, 3}), ("0,2-3", {0, 2, 3})])
def test_cpu_lists_read_as_taskset_writes_them(text: str, cpus: set[int]) -> None:
    assert parse_cpus(text) == cpus


def test_a_bad_cpu_list_names_the_flag() -> None:
    with pytest.raises(SystemExit, match="--client-cpus: 'one' is not a CPU list"):
        parse_cpus("one")


def test_the_machine_watch_reports_only_when_started() -> None:
    """Guards against a run whose measured phase never began being counted as undisturbed."""
    watch = MachineWatch()
    assert watch.stop() is None
    watch.start()
    stall = watch.stop()
    assert stall is not None
    assert stall >= 0.0
