"""Results files as users and tools really hand them back: every line is checked before `compare`,
`--resume` or the MCP tools use one of its numbers, and a bad one is refused naming ``file:line``.

The lines come from real sweeps against the vLLM CPU server (data/real/README.md), changed the way a
hand edit, a forged line or a damaged copy changes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fake_vllm import CHAT_PATH
from tests.verify.bench.test_cli import bench, running
from verify.bench.compare import DuplicateCellError, Verdict, compare
from verify.bench.results import ResultsFileError, load_results
from verify.cli import main

REAL = Path(__file__).parent / "data" / "real"
SWEEP = REAL / "sweep-64-tokens.jsonl"
AGAIN = REAL / "sweep-64-tokens-again.jsonl"
Edit = Callable[[dict[str, Any]], None]


def _lines() -> list[str]:
    return SWEEP.read_text(encoding="utf-8").splitlines()


def _edited(tmp_path: Path, edit: Edit, line: int = 2) -> Path:
    """The real sweep with its ``line``-th line changed by ``edit``."""
    lines = _lines()
    fields = json.loads(lines[line - 1])
    edit(fields)
    lines[line - 1] = json.dumps(fields)
    path = tmp_path / "edited.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _forge_success(fields: dict[str, Any]) -> None:
    fields.update(completed=0, failed=4, errors={"http_503": 4}, success_rate=1.0)


def _set(**values: object) -> Edit:
    return lambda fields: fields.update(values)


def _scale(field: str, factor: float) -> Edit:
    return lambda fields: fields.update({field: fields[field] * factor})


FORGED: list[tuple[str, Edit, str]] = [
    ("success over none completed", _forge_success, "success_rate 1 does not follow from completed 0 and failed 4"),
    ("success rate 7", _set(success_rate=7.0), "success_rate 7 does not follow from completed 4 and failed 0"),
    ("negative TTFT", _set(mean_ttft_ms=-5000.0), "mean_ttft_ms is -5000, below 0"),
    ("not a number", _set(mean_ttft_ms=float("nan")), "mean_ttft_ms: Input should be a finite number"),
    ("infinite", _set(p99_e2el_ms=float("inf")), "p99_e2el_ms: Input should be a finite number"),
    ("doubled throughput", _scale("request_throughput", 2), "request_throughput"),
    ("more tokens than asked", _set(total_output_tokens=4 * 64 + 1), "more than completed 4 x max_tokens 64"),
    ("TTFT after E2EL", lambda f: f.update(mean_ttft_ms=f["mean_e2el_ms"] * 2), "is above mean_e2el_ms"),
    ("wrong type", _set(completed="four"), "completed: Input should be a valid integer"),
    ("unknown status", _set(status="done"), "status: Input should be 'measured' or 'skipped'"),
    ("ceiling flag", _set(ceiling_request_throughput=1.0, exceeds_ceiling=False), "exceeds_ceiling is false"),
    ("more answers than asked", _set(failed=3, errors={"http_503": 3}), "more than the 4 requests the cell asked"),
]


@pytest.mark.parametrize(
    ("edit", "reason"), [(edit, reason) for _, edit, reason in FORGED], ids=[n for n, *_ in FORGED]
)
def test_a_line_verify_could_not_have_written_is_refused_naming_file_and_line(
    tmp_path: Path, edit: Edit, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against a forged or damaged line's numbers coming out of `compare` with exit 0 (a success rate
    of 1.0 over 0 completed passed a 0.99 gate; a NaN was judged a regression; a 7.0 crashed it)."""
    path = _edited(tmp_path, edit)
    with pytest.raises(ResultsFileError, match=f"^{path}:2: "):
        load_results(path)
    assert main(["compare", str(SWEEP), str(path)]) == 2
    error = capsys.readouterr().err
    assert f"{path}:2: " in error
    assert reason in error


def test_non_utf8_and_a_copied_line_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a crash on a non-UTF-8 byte and against `compare` silently picking one of two records
    of a cell (a line pasted twice, or two sweeps concatenated)."""
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(SWEEP.read_bytes().replace(b'"tiny-gemma"', b'"tiny-\xffgemma"', 1))
    assert main(["compare", str(broken), str(SWEEP)]) == 2
    assert f"{broken}:1: not UTF-8 text" in capsys.readouterr().err
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_text(SWEEP.read_text() + _lines()[0] + "\n")
    assert main(["compare", str(SWEEP), str(doubled)]) == 2
    assert f"{doubled}:5: a second line for context 16 x concurrency 1 (the first is line 1)" in capsys.readouterr().err


def test_a_line_cut_by_a_kill_is_still_tolerated(tmp_path: Path) -> None:
    """Guards against the checks refusing the file a killed sweep leaves (its last line cut mid-write)."""
    cut = tmp_path / "cut.jsonl"
    cut.write_text(SWEEP.read_text() + _lines()[0][:150])
    loaded = load_results(cut)
    assert (len(loaded.records), loaded.unreadable_lines) == (4, [5])


def test_compare_refuses_duplicate_cells_given_as_records() -> None:
    """Guards against the library (the MCP tool, `compare` of N files) judging whichever duplicate came last."""
    records = load_results(SWEEP).records
    with pytest.raises(DuplicateCellError, match="B holds two records of context 16 x concurrency 1"):
        compare(records, [*records, records[0]])


def test_a_value_that_is_not_finite_is_never_judged() -> None:
    """Guards against NaN judged as a regression by a caller that builds records itself."""
    a = load_results(SWEEP).records
    b = [record.model_copy(update={"p99_e2el_ms": float("nan"), "trusted": True}) for record in a]
    rows = compare([r.model_copy(update={"trusted": True}) for r in a], b)
    for row in rows:
        (delta,) = [d for d in row.deltas if d.field == "p99_e2el_ms"]
        assert (delta.b, delta.verdict) == (None, None)


def test_compare_shows_would_be_verdicts_of_untrusted_cells_only_when_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against a comparison of two sweeps from a busy machine that judges nothing and offers no way
    to see what the verdicts would be (0 of 42 judged, 24 paragraphs)."""
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["compare", str(SWEEP), str(AGAIN)]) == 0
    plain = capsys.readouterr().out
    assert "not judged (untrusted) in 28" in plain
    assert "*" not in plain.split("\n", 1)[0]
    assert "--allow-untrusted shows their would-be verdicts" in plain
    assert main(["compare", str(SWEEP), str(AGAIN), "--allow-untrusted"]) == 0
    shown = capsys.readouterr().out
    assert "would-be (untrusted, marked *) in 28" in shown
    assert "not judged" not in shown.splitlines()[0]
    rows = compare(load_results(SWEEP).records, load_results(AGAIN).records, allow_untrusted=True)
    assert all(d.would_be and d.verdict is not Verdict.UNTRUSTED for row in rows for d in row.deltas)
    # one line per cell and side, one count per side, one line of advice; no paragraph per warning
    notes = [line for line in shown.splitlines() if line.startswith("⚠")]
    assert len(notes) == 8 + 2
    assert notes[-2:] == [
        "⚠ A: 4 of 4 cells untrusted (load generator CPU-bound)",
        "⚠ B: 4 of 4 cells untrusted (load generator CPU-bound)",
    ]


def _copy_for(url: str, folder: Path) -> Path:
    """The real 64-token sweep as if measured against ``url`` (a local fake server)."""
    folder.mkdir(exist_ok=True)
    path = folder / "sweep.jsonl"
    path.write_text(SWEEP.read_text().replace("http://127.0.0.1:8000", url))
    return path


def test_resume_with_another_flag_is_refused_naming_it_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against `--resume --max-tokens 32` appending 32-token cells to a 64-token file (the report then
    said "32-64 output tokens"), and a resume against another server or workload measuring nothing with exit 0."""
    with running() as server:
        path = _copy_for(server.url, tmp_path)
        before = path.read_bytes()
        same = ["--context", "16,32", "--concurrency", "1,2", "--requests", "4", "--warmup", "1", "--resume"]
        argv = ["bench", "--url", server.url, "--model", "tiny-gemma", "--no-progress", "--output", str(path), *same]
        assert main([*argv, "--max-tokens", "32"]) == 2
        assert "--max-tokens: the file 64; this run 32" in capsys.readouterr().err
        assert main([*argv, "--max-tokens", "64", "--requests", "8"]) == 2
        assert "--requests: the file 4; this run 8" in capsys.readouterr().err
        assert main([*argv, "--max-tokens", "64", "--no-ignore-eos", "--transport", "httpx"]) == 2
        error = capsys.readouterr().err
        assert "--ignore-eos/--no-ignore-eos: the file on; this run off" in error
        assert "--transport: the file aiohttp; this run httpx" in error
        other = _copy_for("http://127.0.0.1:8000", tmp_path / "other")
        assert main([*argv[:-1], "--output", str(other), "--max-tokens", "64", "--resume"]) == 2
        assert f"--url/--stack (endpoint): the file http://127.0.0.1:8000; this run {server.url}" in (
            capsys.readouterr().err
        )
        assert main([*argv, "--max-tokens", "64"]) == 0
        assert not any(r.path == CHAT_PATH for r in server.requests)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "sweep.jsonl"]


def test_resume_refuses_a_forged_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a forged line (success 1.0 over 0 completed) being kept, and gated on, by a resume."""
    path = _edited(tmp_path, _forge_success)
    with running() as server:
        assert bench(server.url, path, "--resume") == 2
        assert not any(r.path == CHAT_PATH for r in server.requests)
    assert f"{path}:2: success_rate 1 does not follow" in capsys.readouterr().err
