"""The PNG chart: drawn with what `verify` installs, titled, and honest about doubtful cells."""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
    assert headline == "gemma-4-12b-it at https://gemma-l4.example.run.app (nvidia-l4, vLLM 0.32.0), 2026-11-22 10:00 UTC"
    assert workload == (
        "chat API, 128 output tokens per request, 32-512 requests per cell; contexts 128, 8192, 16384 tokens x "
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
    workflow installs requirements.txt alone. A child interpreter refuses to import any package outside the
    standard library and requirements.txt (with its dependencies), then runs verify's report step."""
    script = textwrap.dedent(
        f"""
        import importlib.abc, importlib.metadata, sys
        from pathlib import Path
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name

        def runtime_distributions():
            wanted = [Requirement(line).name for line in Path({str(ROOT / "requirements.txt")!r}).read_text().splitlines()
                      if line.strip() and not line.startswith(("#", "-"))]
            seen = set()
            while wanted:
                name = canonicalize_name(wanted.pop())
                if name in seen:
                    continue
                seen.add(name)
                for spec in importlib.metadata.requires(name) or []:
                    requirement = Requirement(spec)
                    if requirement.marker is None or requirement.marker.evaluate({{"extra": ""}}):
                        wanted.append(requirement.name)
            return seen

        allowed_dists = runtime_distributions()
        project = {{init.parent.name for init in Path({str(ROOT)!r}).glob("*/__init__.py")}}
        allowed = set(sys.stdlib_module_names) | project
        for module, dists in importlib.metadata.packages_distributions().items():
            if any(canonicalize_name(d) in allowed_dists for d in dists):
                allowed.add(module)

        class RuntimeOnly(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                top = name.partition(".")[0]
                if top not in allowed and not top.startswith("_"):
                    raise ModuleNotFoundError(f"{{top}} is not a runtime requirement", name=name)
                return None

        sys.meta_path.insert(0, RuntimeOnly())
        import verify.cli
        from verify.bench.report import write_reports
        from verify.bench.results import load_results
        written = write_reports(load_results(Path({str(DATA / "l4-mtp-off.jsonl")!r})).records,
                                Path({str(tmp_path / "run")!r}))
        # Optional imports that libraries try inside try/except (brotli, aiodns...) are refused too, which is
        # the point: the report step must not depend on any of them.
        print(sorted(p.name for p in written), "matplotlib" in allowed, "pytest" in allowed)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['run.csv', 'run.md', 'run.png'] False False"
    assert (tmp_path / "run.png").read_bytes()[:8] == PNG_SIGNATURE
