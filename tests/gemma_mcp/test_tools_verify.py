"""health, bench and compare as an agent calls them, against a local vLLM-shaped server over a real socket.

The tools run `python -m verify` as child processes; the first test does so (the real runner), the others
run the same command by its `main` in-process (tests/gemma_mcp/conftest.py, `InProcessCommands`).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gemma_mcp.results import BenchRun
from gemma_mcp.runner import SubprocessRunner
from gemma_mcp.tools_verify import _bench_summary
from tests.fake_vllm import FakeVllm, FakeVllmConfig
from tests.gemma_mcp.conftest import ROOT, connect, is_file, make_context, remove_files, session_results_dir, text_of
from verify.bench.results import load_results
from verify.numbers import readable

REAL_SWEEP = ROOT / "tests" / "verify" / "bench" / "data" / "real" / "sweep-64-tokens.jsonl"
# A fixed results file whose cells are trusted (enough samples, no client stall): compare calls them `same`.
TRUSTED_RUN = ROOT / "tests" / "verify" / "bench" / "data" / "l4-mtp-off.jsonl"

# A server with a realistic first-token time: against one that answers in a millisecond the load generator
# itself is the bottleneck and verify bench marks the cells untrusted (verify/bench/trust.py).
BENCH_CONFIG = FakeVllmConfig(count_prompt_words=True, pieces=tuple(f" w{i}" for i in range(4)), ttft_s=0.2)


async def test_health_of_a_healthy_server_passes_with_every_check() -> None:
    """The agent must get each check's verdict in structured form, and passed=true only when all six pass:
    through a real `python -m verify health` child, as the server runs it."""
    real_children = dataclasses.replace(make_context(), run_module=SubprocessRunner(ROOT))
    async with FakeVllm() as server, connect(real_children) as client:
        result = await client.call_tool("health", {"url": server.url, "model": "tiny-gemma", "wait_s": 10})
    assert not result.is_error, result.content
    report = result.structured_content
    assert report["passed"] is True
    assert report["exit_code"] == 0
    assert {check["name"]: check["status"] for check in report["report"]["checks"]} == {
        "readiness": "pass",
        "models": "pass",
        "version": "pass",
        "chat": "pass",
        "chat-stream": "pass",
        "metrics": "pass",
    }
    assert text_of(result).startswith("health: PASS")


async def test_health_of_a_wrong_model_fails_with_the_cause() -> None:
    """A server that does not serve the asked name must fail (exit 1) and say so, not pass or error out."""
    async with FakeVllm() as server, connect() as client:
        result = await client.call_tool("health", {"url": server.url, "model": "gemma-4-12b-it", "wait_s": 5})
    report = result.structured_content
    assert report["passed"] is False
    assert report["exit_code"] == 1
    models = next(check for check in report["report"]["checks"] if check["name"] == "models")
    assert models["status"] == "fail"
    assert "gemma-4-12b-it" in text_of(result)


async def test_health_refuses_both_or_neither_target_and_a_wait_beyond_the_cap() -> None:
    """Ambiguous or unbounded requests must be refused before anything runs, naming the argument."""
    async with connect() as client:
        neither = await client.call_tool("health", {})
        both = await client.call_tool("health", {"stack": "l4", "url": "http://127.0.0.1:1"})
        forever = await client.call_tool("health", {"url": "http://127.0.0.1:1", "wait_s": 86400})
        nan = await client.call_tool("health", {"url": "http://127.0.0.1:1", "wait_s": float("nan")})
    for result in (neither, both):
        assert result.is_error
        assert "exactly one of stack" in text_of(result)
    assert forever.is_error
    assert "wait_s: 86400" in text_of(forever)
    assert nan.is_error
    assert "wait_s" in text_of(nan)


async def test_health_of_a_bad_url_gives_the_clis_message() -> None:
    """A malformed URL must come back as verify's own one-line usage message."""
    async with connect() as client:
        result = await client.call_tool("health", {"url": "ftp://example.invalid", "wait_s": 1})
    assert result.is_error
    assert "--url must be an http:// or https:// URL" in text_of(result)


async def test_bench_returns_cells_and_report_paths(tmp_path: Path) -> None:
    """A bounded sweep must return each cell's record and the files a person would open."""
    async with FakeVllm(BENCH_CONFIG) as server, connect() as client:
        result = await client.call_tool(
            "bench",
            {
                "url": server.url,
                "model": "tiny-gemma",
                "concurrency": [1, 2],
                "context": [64],
                "max_tokens": 4,
                "requests_per_cell": 4,
                "wall_time_s": 120,
            },
        )
    assert not result.is_error, result.content
    run = result.structured_content
    assert run["passed"] is True, run["message"]
    cells = run["report"]
    assert [(cell["requested_context"], cell["max_concurrency"]) for cell in cells] == [(64, 1), (64, 2)]
    assert all(cell["completed"] == 4 for cell in cells)
    results_file = Path(run["results_file"])
    assert is_file(results_file)
    assert results_file.is_relative_to(session_results_dir() / "mcp")  # never in the checkout
    assert any(path.endswith(".md") for path in run["report_files"])
    assert run["caps"]["max_users"] == 128
    remove_files([results_file, *run["report_files"]])


async def test_compare_of_a_file_with_itself_is_the_same_in_every_cell() -> None:
    """compare must report each cell of two identical runs as compared and `same`. On a fixed, trusted file:
    a sweep measured on a busy 2-core machine has its cells marked untrusted by the load generator's CPU
    verdict, and this test then saw `untrusted` where it expected `same` (issue 46)."""
    measured = [cell for cell in load_results(TRUSTED_RUN).records if cell.measured]
    async with connect() as client:
        compared = await client.call_tool("compare", {"a": str(TRUSTED_RUN), "b": str(TRUSTED_RUN)})
    assert not compared.is_error, compared.content
    rows = [row for row in compared.structured_content["cells"] if row["status"] == "compared"]
    assert [(row["context"], row["concurrency"]) for row in rows] == [
        (cell.requested_context, cell.max_concurrency) for cell in measured
    ]
    assert len(rows) >= 3
    assert all(row["deltas"]["request_throughput"]["change"] == 0 for row in rows)
    assert all(row["deltas"]["request_throughput"]["verdict"] == "same" for row in rows)
    assert "(A) vs" in compared.structured_content["markdown"]


async def test_bench_refuses_loads_beyond_its_caps() -> None:
    """An agent must not be able to launch an unbounded benchmark: each cap names the argument and the limit."""
    async with connect() as client:
        users = await client.call_tool("bench", {"url": "http://127.0.0.1:1", "concurrency": [2048]})
        cells = await client.call_tool(
            "bench", {"url": "http://127.0.0.1:1", "concurrency": [1, 2, 4, 8], "context": [1, 2, 3, 4]}
        )
        wall = await client.call_tool("bench", {"url": "http://127.0.0.1:1", "wall_time_s": 3600})
        requests = await client.call_tool("bench", {"url": "http://127.0.0.1:1", "requests_per_cell": 100000})
    assert "concurrency: 2048 is outside 1..128" in text_of(users)
    assert "4 x 4 cells is more than this tool's cap of 12" in text_of(cells)
    assert "wall_time_s: 3600" in text_of(wall)
    assert "requests_per_cell: 100000" in text_of(requests)


async def test_compare_refuses_files_outside_the_project(tmp_path: Path) -> None:
    """compare reads local files: it must not become a way to read arbitrary paths."""
    outside = tmp_path / "x.jsonl"
    outside.write_text("", encoding="utf-8")
    async with connect() as client:
        result = await client.call_tool("compare", {"a": str(outside), "b": str(outside)})
    assert result.is_error
    assert "outside the project root" in text_of(result)


def test_bench_text_counts_untrusted_cells_rounds_numbers_and_names_no_cli_flag() -> None:
    """Guards against "bench: PASS" with raw floats (58.77129879670868 req/s), no word that every cell was
    untrusted, and advice naming a CLI flag the tool does not take (cells of a real sweep, all untrusted)."""
    cells = load_results(REAL_SWEEP).records
    run = BenchRun(
        command=["python", "-m", "verify", "bench"],
        exit_code=1,
        passed=False,
        timed_out=False,
        report=cells,
        message="failed SLO not judged on 4 untrusted cells (16 x 1, 16 x 2, 32 x 1, 32 x 2): their latencies "
        "include the client's own delay; --allow-untrusted to gate on them anyway",
        results_file="bench-results/mcp/r.jsonl",
        report_files=[],
        caps={},
    )
    text = _bench_summary(run)
    lines = text.splitlines()
    assert lines[0] == "bench: FAIL (exit 1), 4 of 4 cells untrusted (load generator CPU-bound)"
    assert lines[2].startswith(f"  context 16 x 1 user: {readable(cells[0].request_throughput)} req/s, p99 TTFT ")
    assert "(untrusted, client CPU-bound: " in lines[2]
    assert not re.search(r"\d\.\d{4,}", text), text
    assert "--" not in text
    assert lines[-1].endswith("their latencies include the client's own delay")
    passed = _bench_summary(run.model_copy(update={"passed": True, "exit_code": 0}))
    assert passed.startswith("bench: PASS, 4 of 4 cells untrusted (load generator CPU-bound)\n")
