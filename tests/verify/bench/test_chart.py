"""The PNG chart: drawn with what `verify` installs, titled, and honest about doubtful cells."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image

from verify.bench.chart import CAVEAT, chart_png, nice_step, titles, y_ticks
from verify.bench.results import CellRecord, load_results

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parents[3]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def records() -> list[CellRecord]:
    return load_results(DATA / "l4-mtp-off.jsonl").records


def caveat_pixels(path: Path) -> int:
    red = Image.new("RGB", (1, 1), CAVEAT).getpixel((0, 0))
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        colours = rgb.getcolors(rgb.width * rgb.height) or []
        return sum(count for count, colour in colours if colour == red)


def test_chart_is_a_png(tmp_path: Path) -> None:
    """Guards against a chart step that silently writes nothing (or needs a display)."""
    target = tmp_path / "chart.png"
    assert chart_png(records(), target)
    assert target.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(target) as image:
        assert image.size == (1320, 640)


def test_chart_title_names_model_endpoint_date_and_workload() -> None:
    """Guards against a chart that, pasted into a ticket, cannot be told from last week's or another stack's."""
    headline, workload = titles(records())
    assert headline == (
        "gemma-4-e4b-it at https://gemma-l4.example.run.app (nvidia-l4, vLLM 0.32.0), 2026-11-22 10:00 UTC"
    )
    assert workload == (
        "chat API, 128 output tokens per request, 32-512 requests per cell; context 128, 8192, 16384 tokens x "
        "concurrency 1, 128; 1 of 4 cells skipped (see the report)"
    )


def test_cells_with_warnings_or_untrusted_are_ringed(tmp_path: Path) -> None:
    """Guards against a chart that draws a platform-limited or untrusted cell like a clean measurement."""
    clean = [r.model_copy(update={"warnings": []}) for r in records()]
    chart_png(clean, tmp_path / "clean.png")
    assert caveat_pixels(tmp_path / "clean.png") == 0
    chart_png(records(), tmp_path / "warned.png")  # 128 x 128 carries a platform-limit warning
    assert caveat_pixels(tmp_path / "warned.png") > 0
    untrusted = [clean[0].model_copy(update={"trusted": False}), *clean[1:]]
    chart_png(untrusted, tmp_path / "untrusted.png")
    assert caveat_pixels(tmp_path / "untrusted.png") > 0


def test_no_chart_when_nothing_was_measured(tmp_path: Path) -> None:
    """Guards against an empty chart that looks like a result when every cell was skipped."""
    skipped = [r for r in records() if not r.measured]
    assert skipped
    assert not chart_png(skipped, tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()


def test_ticks_are_numbers_a_person_would_choose() -> None:
    """Guards against axes labelled 0, 3.7, 7.4... or ticks that stop below the highest point."""
    assert nice_step(20) == 5
    assert nice_step(8000) == 2000
    assert nice_step(0.45) == 0.1
    assert y_ticks(20) == [0, 5, 10, 15, 20]
    assert y_ticks(21)[-1] >= 21
    assert y_ticks(0) == [0, 1.0]


def test_chart_needs_only_the_runtime_requirements(tmp_path: Path) -> None:
    """Guards against a chart that only works where the development requirements are installed: the deploy
    workflow installs requirements.txt alone (see tests/verify/bench/runtime_only.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.verify.bench.runtime_only", str(DATA / "l4-mtp-off.jsonl"), str(tmp_path / "r")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["r.csv r.md r.png", "refuses matplotlib"]
    assert (tmp_path / "r.png").read_bytes()[:8] == PNG_SIGNATURE
