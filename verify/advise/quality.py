"""Quality in the answer: one row per distinct deployment, the cheapest per model ordered by quality, a quality
floor, and the one line that says what a row gives up and saves against the next better model.

Why: the cheapest row is often the smallest model, and a user who was never told so has taken a quality downgrade
nobody asked for. The scores are the model card's (serving/quality.py); a variant's loss against bf16 is what was
published, which for most variants is nothing: the row says so instead of inventing a number.
"""

from __future__ import annotations

from collections.abc import Iterable

from serving.pricing import usd
from serving.quality import QualityBook, quality_book
from verify.advise.report import Row


def quality_fields(model: str, variant: str, book: QualityBook | None = None) -> dict[str, object]:
    """The row's quality: the primary benchmark's score (None where none is published), how it reads, and the
    variant's published loss against bf16."""
    book = book or quality_book()
    score = book.score(model)
    entry = book.models.get(model)
    loss = book.loss(variant)
    text = "no published score" if score is None else f"{book.label()} {_shown(score)}"
    if entry is not None and not entry.confirmed:
        text += " (?)"
    return {
        "quality_score": score,
        "quality": text,
        "quality_source": entry.cite() if entry is not None else "serving/data/model-quality.json has no entry",
        "variant_loss": None if loss is None else loss.loss,
    }


def _shown(score: float) -> str:
    """A percentage to one decimal as the model card prints it; an Elo rating whole."""
    return f"{score:.1f}" if score < 100 else f"{score:.0f}"


def below_floor(model: str, floors: Iterable[tuple[str, float]], book: QualityBook | None = None) -> str | None:
    """Why the model is under a quality floor (``--min-score BENCHMARK=X``), or None where it meets every one. A
    model with no published score on the benchmark does not meet it: the floor is a promise about quality."""
    book = book or quality_book()
    for benchmark, floor in floors:
        score = book.score(model, benchmark)
        if score is None:
            return f"no published {book.label(benchmark)} score (the floor asks >= {floor:g})"
        if score < floor:
            return f"{book.label(benchmark)} {_shown(score)} < {floor:g}"
    return None


def _identity(row: Row) -> tuple[object, ...]:
    """What makes two rows the same deployment to the user: where and how it runs, at what speed and price."""
    return (
        row.model,
        row.shape,
        row.platform,
        row.region,
        row.provisioning,
        row.zone,
        row.tensor_parallel,
        row.replicas,
        row.billed_units,
        row.speculative_tokens,
        round(row.usd_per_month, 2),
        round(row.p95_ttft_ms, 1),
        round(row.tpot_ms, 2),
        None if row.measured is None else tuple(sorted(row.measured.items())),
    )


def one_per_deployment(rows: list[Row]) -> list[Row]:
    """Rows identical but for the variant's name (bf16 and its QAT checkpoint stored in bf16; two NVFP4 repos of
    the same model) are one row, the first in the catalog's order, naming the others in ``same_as``."""
    kept: dict[tuple[object, ...], Row] = {}
    for row in rows:
        key = _identity(row)
        first = kept.get(key)
        if first is None:
            kept[key] = row
        else:
            kept[key] = first.model_copy(update={"same_as": (*first.same_as, row.variant)})
    return list(kept.values())


def best_per_model(rows: list[Row]) -> list[Row]:
    """The first row of each model (``rows`` in ranking order: the cheapest known to run), best model first: by
    the primary benchmark's score, models with none last."""
    first: dict[str, Row] = {}
    for row in rows:
        first.setdefault(row.model, row)
    return sorted(first.values(), key=lambda r: (r.quality_score is None, -(r.quality_score or 0.0), r.usd_per_month))


def with_versus(rows: list[Row], book: QualityBook | None = None) -> list[Row]:
    """Each row but the best with one line against the next better model above it: the points it gives up on the
    primary benchmark and what it saves a month (or that it costs more: the better model is also cheaper)."""
    book = book or quality_book()
    out: list[Row] = []
    for index, row in enumerate(rows):
        better = next(
            (
                other
                for other in reversed(rows[:index])
                if other.quality_score is not None
                and (row.quality_score is None or other.quality_score > row.quality_score)
            ),
            None,
        )
        out.append(row if better is None else row.model_copy(update={"versus": _versus(row, better, book)}))
    return out


def _versus(row: Row, better: Row, book: QualityBook) -> str:
    label = book.label()
    assert better.quality_score is not None
    gives_up = (
        f"gives up {better.quality_score - row.quality_score:.1f} points of {label} "
        f"({_shown(better.quality_score)} -> {_shown(row.quality_score)})"
        if row.quality_score is not None
        else f"has no published {label} score ({better.model}: {_shown(better.quality_score)})"
    )
    saving = better.usd_per_month - row.usd_per_month
    if saving > 0:
        cost = f"saves {usd(saving)}/month ({saving / better.usd_per_month:.0%})"
    elif saving < 0:
        cost = f"costs {usd(-saving)}/month more: the better model is also cheaper"
    else:
        cost = "costs the same"
    return f"against {better.model} ({better.variant} on {better.shape}): {gives_up}, {cost}"
