"""The PNG chart: request throughput, and end-to-end latency at p50/p90/p95/p99 (p95 bold, with its 95%
interval as whiskers), against concurrency (or the request rate of open-loop cells), one colour per context.
A percentile from fewer samples than its interval needs (verify.bench.confidence) is not drawn.

Why Pillow and not matplotlib: the chart is written wherever ``verify bench`` runs, the deploy
workflow included, and that installs only requirements.txt. matplotlib would add about 128 MB
installed (matplotlib 25 MB, numpy 53 MB, Pillow 20 MB, fontTools 23 MB, kiwisolver, contourpy and
four more packages) to draw two line charts; Pillow alone is about 20 MB, one package with no
dependencies, and ships a scalable font. What matplotlib would have done for us here is small: linear
"nice" ticks, a log2 x axis whose ticks are the measured concurrencies, and a legend.

The title carries the model, endpoint, date and workload so a chart copied into a ticket still
says what it shows; cells whose record has warnings or is untrusted are drawn as red rings, and
the footer says where their reasons are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from PIL import Image, ImageDraw, ImageFont

from verify.bench.caveats import needs_a_look, too_few_samples
from verify.bench.results import CellRecord
from verify.bench.workload import Workload
from verify.numbers import readable

WIDTH, HEIGHT = 1320, 640
BACKGROUND = "white"
INK = "#222222"
GRID = "#e3e3e3"
CAVEAT = "#d62728"
# matplotlib's default "tab10" cycle, so charts look as they did; more contexts than colours repeat them.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
Y_TICKS = 5
# The highest point sits below the frame, not on it.
HEADROOM = 1.05
MARKER_RADIUS = 5

Font: TypeAlias = ImageFont.FreeTypeFont | ImageFont.ImageFont
Box: TypeAlias = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Line:
    """One line per context in a panel: a record field, how thick, and its label at the line's end."""

    field: str
    width: int = 3
    label: str = ""

    def value(self, record: CellRecord) -> float | None:
        if too_few_samples(record, self.field) is not None:
            return None
        value = getattr(record, self.field)
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    lines: tuple[Line, ...]

    def value(self, record: CellRecord) -> float | None:
        values = [v for v in (line.value(record) for line in self.lines) if v is not None]
        intervals = [record.ci[line.field][1] for line in self.lines if line.field in record.ci]
        return max([*values, *intervals], default=None)


PANELS = (
    Panel("Request throughput (req/s)", (Line("request_throughput"),)),
    Panel(
        "End-to-end latency (ms): p50, p90, p95 (bold, 95% CI), p99",
        (
            Line("median_e2el_ms", 1, "p50"),
            Line("p90_e2el_ms", 1, "p90"),
            Line("p95_e2el_ms", 3, "p95"),
            Line("p99_e2el_ms", 1, "p99"),
        ),
    ),
)


def column(record: CellRecord) -> float:
    """The x of a cell: its request rate (open loop) or its users (closed loop)."""
    return record.request_rate if record.request_rate is not None else record.max_concurrency


def nice_step(span: float, ticks: int = Y_TICKS) -> float:
    """The tick step a person would choose: 1, 2, 2.5 or 5 times a power of ten, about ``ticks`` per span."""
    if span <= 0:
        return 1.0
    rough = span / ticks
    power = 10.0 ** math.floor(math.log10(rough))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if rough <= m * power * (1 + 1e-9))


def y_ticks(top: float) -> list[float]:
    """From 0 to the first tick at or above ``top`` (throughput and latency both start at zero)."""
    step = nice_step(top)
    count = max(1, math.ceil(top / step - 1e-9))
    return [step * i for i in range(count + 1)]


def chart_font(size: int) -> Font:
    """The charts' font at `size` pixels (the bench charts and the matrix's verdict chart share it)."""
    # Pillow's bundled scalable font (Pillow >= 10.1 with FreeType, which every Pillow wheel has).
    return ImageFont.load_default(size=size)


def fitting_font(draw: ImageDraw.ImageDraw, text: str, size: int) -> Font:
    """The font at ``size``, or smaller until ``text`` fits the width (long URLs, many concurrencies)."""
    font = chart_font(size)
    while size > 9 and draw.textlength(text, font=font) > WIDTH - 20:
        size -= 1
        font = chart_font(size)
    return font


class _Axes:
    """One panel: maps concurrency (log2) and value (linear from 0) to pixels inside ``box``."""

    def __init__(self, box: Box, concurrencies: Sequence[float], top: float) -> None:
        self.box = box
        self.low = math.log2(min(concurrencies))
        self.high = math.log2(max(concurrencies))
        self.top = top

    def x(self, concurrency: float) -> float:
        left, _, right, _ = self.box
        pad = 30
        if self.high == self.low:
            return (left + right) / 2
        share = (math.log2(concurrency) - self.low) / (self.high - self.low)
        return left + pad + share * (right - left - 2 * pad)

    def y(self, value: float) -> float:
        _, upper, _, lower = self.box
        return lower - (value / self.top) * (lower - upper) if self.top > 0 else lower


def _draw_panel(
    draw: ImageDraw.ImageDraw,
    panel: Panel,
    *,
    area: Box,
    measured: Sequence[CellRecord],
    colours: dict[int, str],
    fonts: dict[str, Font],
) -> None:
    left, top, right, bottom = area
    plot: Box = (left + 80, top + 34, right - 10, bottom - 50)
    draw.text(((plot[0] + plot[2]) / 2, top + 8), panel.title, fill=INK, font=fonts["panel"], anchor="mt")
    values = [v for v in (panel.value(r) for r in measured) if v is not None]
    ticks = y_ticks(max(values, default=0.0) * HEADROOM)
    concurrencies = sorted({column(r) for r in measured})
    axes = _Axes(plot, concurrencies, ticks[-1])
    for tick in ticks:
        y = axes.y(tick)
        draw.line([(plot[0], y), (plot[2], y)], fill=GRID)
        draw.text((plot[0] - 8, y), readable(tick), fill=INK, font=fonts["tick"], anchor="rm")
    for concurrency in concurrencies:
        x = axes.x(concurrency)
        draw.line([(x, plot[1]), (x, plot[3])], fill=GRID)
        draw.text((x, plot[3] + 8), readable(concurrency), fill=INK, font=fonts["tick"], anchor="mt")
    draw.rectangle(plot, outline=INK)
    across = "request rate (req/s)" if any(r.request_rate is not None for r in measured) else "concurrency (users)"
    draw.text(((plot[0] + plot[2]) / 2, plot[3] + 30), across, fill=INK, font=fonts["tick"], anchor="mt")
    for context, colour in colours.items():
        for line in panel.lines:
            records = [r for r in measured if r.requested_context == context]
            _draw_line(draw, axes, line=line, records=records, colour=colour, fonts=fonts)


def _draw_line(
    draw: ImageDraw.ImageDraw,
    axes: _Axes,
    *,
    line: Line,
    records: Sequence[CellRecord],
    colour: str,
    fonts: dict[str, Font],
) -> None:
    series = sorted((r for r in records if line.value(r) is not None), key=column)
    points = [(axes.x(column(r)), axes.y(line.value(r) or 0.0)) for r in series]
    if len(points) > 1:
        draw.line(points, fill=colour, width=line.width, joint="curve")
    for record, (x, y) in zip(series, points, strict=True):
        interval = record.ci.get(line.field)
        if interval is not None and line.width > 1:
            low, high = axes.y(interval[0]), axes.y(interval[1])
            draw.line([(x, low), (x, high)], fill=colour, width=1)
            draw.line([(x - 4, low), (x + 4, low)], fill=colour, width=1)
            draw.line([(x - 4, high), (x + 4, high)], fill=colour, width=1)
        if line.width > 1:
            _marker(draw, x, y, colour, caveat=needs_a_look(record))
    if line.label and points:
        x, y = points[-1]
        draw.text((x + 8, y), line.label, fill=colour, font=fonts["tick"], anchor="lm")


def _marker(draw: ImageDraw.ImageDraw, x: float, y: float, colour: str, *, caveat: bool) -> None:
    r = MARKER_RADIUS
    if caveat:
        # A ring that cannot be mistaken for a point: "this number has a reason not to be believed".
        ring = r + 4
        draw.ellipse((x - ring, y - ring, x + ring, y + ring), outline=CAVEAT, width=3, fill=BACKGROUND)
    draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)


def _legend(
    draw: ImageDraw.ImageDraw, colours: dict[int, str], y: int, fonts: dict[str, Font], *, caveats: bool
) -> None:
    x = 40.0
    draw.text((x, y), "context (prompt tokens):", fill=INK, font=fonts["tick"], anchor="lm")
    x += draw.textlength("context (prompt tokens):", font=fonts["tick"]) + 18
    for context, colour in colours.items():
        draw.line([(x, y), (x + 28, y)], fill=colour, width=3)
        _marker(draw, x + 14, y, colour, caveat=False)
        label = str(context)
        draw.text((x + 36, y), label, fill=INK, font=fonts["tick"], anchor="lm")
        x += 36 + draw.textlength(label, font=fonts["tick"]) + 26
    if caveats:
        x += 20
        _marker(draw, x, y, INK, caveat=True)
        draw.text(
            (x + 18, y),
            "cell has warnings or is untrusted: see the report's notes",
            fill=CAVEAT,
            font=fonts["tick"],
            anchor="lm",
        )


def titles(records: Sequence[CellRecord]) -> tuple[str, str]:
    """The chart's two title lines: model, endpoint and date; then the workload and what was skipped."""
    workload = Workload.of(records)
    skipped = sum(not record.measured for record in records)
    skips = f"; {skipped} of {len(records)} cells skipped (see the report)" if skipped else ""
    return workload.headline(), f"{workload.requests()}; {workload.grid()}{skips}"


def chart_png(records: Sequence[CellRecord], path: Path) -> bool:
    """Draw the chart to ``path``; False (and no file) when no cell was measured: an empty chart says
    nothing, and a missing one cannot be mistaken for a result."""
    records = list({(r.requested_context, column(r)): r for r in records}.values())  # last line wins
    measured = [record for record in records if record.measured]
    if not measured:
        return False
    fonts: dict[str, Font] = {"panel": chart_font(16), "tick": chart_font(14)}
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    headline, subtitle = titles(records)
    draw.text((WIDTH / 2, 14), headline, fill=INK, font=fitting_font(draw, headline, 20), anchor="mt")
    draw.text((WIDTH / 2, 44), subtitle, fill=INK, font=fitting_font(draw, subtitle, 15), anchor="mt")
    contexts = sorted({r.requested_context for r in measured})
    colours = {context: PALETTE[i % len(PALETTE)] for i, context in enumerate(contexts)}
    half = WIDTH // 2
    for index, panel in enumerate(PANELS):
        area: Box = (index * half + 10, 74, (index + 1) * half - 10, HEIGHT - 50)
        _draw_panel(draw, panel, area=area, measured=measured, colours=colours, fonts=fonts)
    _legend(draw, colours, HEIGHT - 28, fonts, caveats=any(needs_a_look(r) for r in measured))
    path.parent.mkdir(parents=True, exist_ok=True)
    # zlib's fastest level: every bench run writes one chart, and optimize=True (level 9 and a search over
    # filters) took 6x as long (170 ms against 28) for a file 25% smaller (39 KB against 52).
    image.save(path, format="PNG", compress_level=1)
    return True
