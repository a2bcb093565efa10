"""`python -m preview.matrix` (`make matrix`): every catalog model x variant x accelerator shape, before spending.

For a stated workload (context and output tokens per request) each row says whether the combination fits
(or the loader's refusal, with its numbers), the KV cache in tokens and how many such requests fit at once,
the shape's price per hour, and the physical ceilings: compute-bound prefill and bandwidth-bound decode
tokens/s, and the cost per 1M output tokens at that decode ceiling. Ceilings are upper bounds from peak
FLOP/s and memory bandwidth, never measurements (`verify bench` measures). `--format json` prints one
object per combination. Offline: no credentials, no network.

Exit codes: 0 printed; 2 usage errors (an unknown model, shape or KV-cache dtype, a variant of none of the models
asked, a request longer than any model asked takes).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

from preview.closed_pipe import run_until_reader_leaves
from preview.stack_file import StackFileError, project_root
from serving.catalog import catalog_model
from serving.pricing import usd
from serving.speed_records import SpeedRecord, load_speed_records, matching
from serving.workload_choices import (
    KV_CACHE_DTYPES,
    context_problem,
    kv_cache_dtype_problem,
    model_problems,
    variant_problems,
)
from stacks.estimate import Estimate, estimate, replica_of
from stacks.fit import SHAPES, Fit, Workload, fit_matrix, shape_named

_CEILING_NOTE = (
    "prefill/decode: CEILINGS from peak bf16 FLOP/s and memory bandwidth (not measurements; `gemma-verify bench` "
    "measures, and a speed record's figure shows under measured); $/1M out at the decode ceiling"
)


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _row(fit: Fit, measured: SpeedRecord | None = None) -> list[str]:
    verdict = "fits" if fit.fits else "no"
    if fit.fits and fit.warnings:
        verdict = "fits*"
    return [
        fit.model,
        fit.variant,
        fit.shape,
        f"{fit.tensor_parallel}" + (f" x{fit.replicas_per_node}" if fit.replicas_per_node > 1 else ""),
        verdict,
        _number(fit.weight_bytes / 1e9 if fit.weight_bytes else None, 1),
        _number(fit.kv_tokens),
        _number(fit.sequences),
        usd(fit.usd_per_hour) if fit.usd_per_hour is not None else "-",
        _number(fit.prefill_ceiling_tokens_per_s),
        _number(fit.decode_ceiling_tokens_per_s),
        usd(fit.usd_per_million_output_tokens_at_ceiling) if fit.usd_per_million_output_tokens_at_ceiling else "-",
        "-" if measured is None else _measured_cell(fit, measured),
    ]


def estimate_at(fit: Fit, record: SpeedRecord, workload: Workload | None = None) -> Estimate | None:
    """The latency model's estimate for a fitting combination at a speed record's users and tokens: what the
    measured figure is shown beside (the same replica `gemma-verify advise` ranks), with the workload's reuse."""
    if not fit.fits or not fit.sequences:
        return None
    workload = workload or Workload()
    replica = replica_of(
        catalog_model(fit.model),
        fit.variant,
        shape_named(fit.shape).accelerator,
        fit.tensor_parallel,
        batch_cap=fit.sequences,
        speculative_tokens=record.speculative_tokens or 0,
    )
    return estimate(
        replica,
        prompt_tokens=record.prompt_tokens,
        output_tokens=record.output_tokens,
        users=record.concurrency,
        reused_tokens=workload.reused_tokens,
        distinct_prefixes=workload.distinct_prefixes,
    )


def _measured_cell(fit: Fit, record: SpeedRecord) -> str:
    """``123 @8 (est 98)``: measured output tokens/s at its users, the estimate at the same load beside it."""
    found = estimate_at(fit, record)
    shown = f"{record.output_throughput:,.0f} @{record.concurrency}"
    if found is None or found.at.saturated:
        return shown
    return f"{shown} (est {found.at.output_tokens_per_s:,.0f})"


HEADER = [
    "model",
    "variant",
    "shape",
    "tp",
    "fits",
    "weights GB",
    "KV tokens",
    "seqs",
    "$/h",
    "prefill",
    "decode",
    "$/1M out",
    "measured",
]

Measured = dict[tuple[str, str, str], SpeedRecord]

# What a refusal is about, from the loader's message (stacks/loading): the matrix prints one line per kind.
_REASON_KINDS = (
    ("weights need", "weights larger than the shape's usable memory"),
    ("cannot run on", "a precision the accelerator does not serve"),
    ("needs at least", "fewer chips than upstream needs"),
    ("pass through host memory", "host memory smaller than the checkpoint"),
    ("sequence needs", "one request's KV cache does not fit"),
)


def reason_kind(why_not: str) -> str:
    """The kind of a refusal: the first of the kinds above its problems show (weights before host memory), or
    the key its first problem names when none does."""
    for phrase, kind in _REASON_KINDS:
        if phrase in why_not:
            return kind
    return why_not.split(":", 1)[0]


def measured_rows(fits: list[Fit], workload: Workload, records: list[SpeedRecord]) -> Measured:
    """Per (model, variant, shape): the speed record (gemma-verify calibrate) with the most output tokens/s at this
    workload, shown beside the ceilings: a measured figure is preferred to an estimate, and both are shown."""
    found: Measured = {}
    for fit in fits:
        hits = matching(records, fit.model, fit.variant, fit.shape, workload.context_tokens, workload.output_tokens)
        if hits:
            found[(fit.model, fit.variant, fit.shape)] = max(hits, key=lambda r: r.output_throughput)
    return found


def table(fits: list[Fit], workload: Workload, measured: Measured | None = None) -> str:
    """The text matrix: one line per combination, then why each refused one does not fit."""
    measured = measured or {}
    rows = [HEADER, *(_row(fit, measured.get((fit.model, fit.variant, fit.shape))) for fit in fits)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [f"workload: {workload.describe()}; seqs = such requests resident at once", _CEILING_NOTE, ""]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    refused = [fit for fit in fits if not fit.fits]
    if refused:
        lines += ["", "why not (one line per reason; the first combination's numbers as the example):"]
        kinds: dict[str, list[Fit]] = {}
        for fit in refused:
            kinds.setdefault(reason_kind(fit.why_not or ""), []).append(fit)
        for kind, members in kinds.items():
            names = ", ".join(f"{fit.model} {fit.variant} on {fit.shape}" for fit in members)
            lines.append(f"  {kind} ({len(members)}): {names}. E.g. {members[0].why_not}")
    flagged: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for fit in fits:
        if fit.fits and fit.warnings:
            flagged.setdefault((fit.model, fit.variant, fit.warnings), []).append(fit.shape)
    if flagged:
        lines += ["", "* fits, with warnings (one line per model, variant and warning):"]
        lines += [
            f"  {model} {variant} on {', '.join(shapes)}: {'; '.join(warnings)}"
            for (model, variant, warnings), shapes in flagged.items()
        ]
    prices = sorted({fit.price_basis for fit in fits})
    lines += ["", "prices: " + "; ".join(prices) + " (serving/data/pricing.json)"]
    if measured:
        lines += [
            "",
            (
                "measured: output tokens/s @ users from speed records (gemma-verify calibrate), beside the "
                "ceilings and the latency model's estimate at the same users (est):"
            ),
        ]
        lines += [
            f"  {model} {variant} on {shape}: {record.cite()}" for (model, variant, shape), record in measured.items()
        ]
        estimates = [
            found
            for fit in fits
            if (record := measured.get((fit.model, fit.variant, fit.shape))) is not None
            and (found := estimate_at(fit, record)) is not None
        ]
        lines += [f"  est: {basis}; {estimates[0].error}" for basis in dict.fromkeys(e.basis for e in estimates)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class FitMatrixOptions:
    """Which combinations to print, for which workload, and how; empty filters mean all."""

    workload: Workload = field(default_factory=Workload)
    models: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    as_json: bool = False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preview.matrix", description=__doc__)
    parser.add_argument("--context", type=int, default=Workload.context_tokens, help="prompt tokens per request")
    parser.add_argument("--output", type=int, default=Workload.output_tokens, help="output tokens per request")
    parser.add_argument(
        "--kv-cache-dtype",
        default=Workload.kv_cache_dtype,
        help=f"the KV cache's element type: {', '.join(KV_CACHE_DTYPES)} (default {Workload.kv_cache_dtype})",
    )
    parser.add_argument("--text-only", action="store_true", help="serve with --language-model-only (no towers)")
    parser.add_argument(
        "--reused-tokens",
        type=int,
        default=0,
        help="prompt tokens each request shares with earlier ones (a system prompt, history): the prefix cache "
        "serves them (default 0: unknown traffic)",
    )
    parser.add_argument(
        "--distinct-prefixes",
        type=int,
        default=1,
        help="how many different reused prefixes are in play at once (default 1: one shared system prompt)",
    )
    parser.add_argument("--model", action="append", help="a catalog id (repeatable; default: all)")
    parser.add_argument("--variant", action="append", help="a variant name (repeatable; default: all)")
    parser.add_argument("--shape", action="append", help=f"one of {', '.join(s.name for s in SHAPES)} (repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    options = FitMatrixOptions(
        workload=Workload(
            context_tokens=args.context,
            output_tokens=args.output,
            kv_cache_dtype=args.kv_cache_dtype,
            text_only=args.text_only,
            reused_tokens=args.reused_tokens,
            distinct_prefixes=args.distinct_prefixes,
        ),
        models=tuple(args.model or ()),
        variants=tuple(args.variant or ()),
        shapes=tuple(args.shape or ()),
        as_json=args.format == "json",
    )
    problems = usage_problems(options)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    print(render(options), end="")
    return 0


def render(options: FitMatrixOptions) -> str:
    """The matrix as text (``table``) or as one JSON document, newline-terminated."""
    workload = options.workload
    fits = [
        fit
        for fit in fit_matrix(workload, models=list(options.models), shapes=list(options.shapes))
        if not options.variants or fit.variant in options.variants
    ]
    measured = measured_rows(fits, workload, _speed_records())
    if not options.as_json:
        return table(fits, workload, measured)
    document = {
        "workload": {
            "contextTokens": workload.context_tokens,
            "outputTokens": workload.output_tokens,
            "kvCacheDtype": workload.kv_cache_dtype,
            "gpuMemoryUtilization": workload.gpu_memory_utilization,
            "textOnly": workload.text_only,
            "reusedTokens": workload.reused_tokens,
            "distinctPrefixes": workload.distinct_prefixes,
        },
        "rows": [
            {
                **fit.as_dict(),
                "measured": (
                    record.model_dump(mode="json")
                    if (record := measured.get((fit.model, fit.variant, fit.shape))) is not None
                    else None
                ),
                "estimatedAtMeasured": _estimate_json(fit, measured.get((fit.model, fit.variant, fit.shape))),
            }
            for fit in fits
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _estimate_json(fit: Fit, record: SpeedRecord | None) -> dict[str, object] | None:
    """The estimate beside a measured figure, for machines: its numbers, basis and stated error."""
    found = None if record is None else estimate_at(fit, record)
    if found is None:
        return None
    at = found.at
    return {
        "users": record.concurrency if record is not None else None,
        "outputTokensPerS": None if at.saturated else round(at.output_tokens_per_s, 1),
        "requestsPerS": None if at.saturated else round(at.request_rate, 3),
        "p95TtftMs": None if at.saturated else round(at.ttft_p95_s * 1000, 1),
        "tpotMs": None if at.saturated else round(at.tpot_s * 1000, 2),
        "basis": found.basis,
        "error": found.error,
    }


def _speed_records() -> list[SpeedRecord]:
    """The project's speed records; none when the matrix runs outside a project."""
    try:
        return load_speed_records(project_root())
    except StackFileError:
        return []


def usage_problems(options: FitMatrixOptions) -> list[str]:
    """Each filter naming nothing the catalog has (a variant of none of the models asked included), a KV-cache dtype
    the planner does not size, and a workload of no tokens or longer than any model asked takes, one line each."""
    workload = options.workload
    problems = model_problems(options.models)
    problems += variant_problems(options.models, options.variants)
    shapes = [shape.name for shape in SHAPES]
    problems += [f"--shape {s!r}: allowed: {', '.join(shapes)}" for s in options.shapes if s not in shapes]
    if (dtype := kv_cache_dtype_problem(workload.kv_cache_dtype)) is not None:
        problems.append(dtype)
    if workload.context_tokens < 1 or workload.output_tokens < 1:
        problems.append("--context and --output must be at least 1 token")
    elif length := context_problem(workload.context_tokens, workload.output_tokens, options.models, flag="--context"):
        problems.append(length)
    if not 0 <= workload.reused_tokens <= workload.context_tokens:
        problems.append("--reused-tokens must be between 0 and --context")
    if workload.distinct_prefixes < 1:
        problems.append("--distinct-prefixes must be at least 1")
    return problems


if __name__ == "__main__":
    sys.exit(run_until_reader_leaves(main))
