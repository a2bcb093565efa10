"""`python -m benchmarks.writeup_figures`: every write-up figure beside the latency model's prediction and error.

The figures (serving/data/writeup-figures.json) were measured by hand in public write-ups: targets with their own
error, not truths. This script fits the model's factors to the unflagged ``check`` figures, predicts every figure
that has a workload, prints each with its error, the medians per quantity and per write-up, and a leave-one-
write-up-out table (each write-up predicted by a fit on the others only: the honest error, since a fit always
flatters the figures it saw). ``--write`` stores the fit in serving/data/latency-efficiency.json, which every
estimate (gemma-verify advise, make matrix, the MCP fit tool) reads.

How the fit works: stacks/latency_fit.py (its docstring, and docs/advisor.md), which `gemma-verify calibrate
--refit` shares, with the project's speed records added to the write-up figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from serving.catalog import catalog_model
from serving.latency import Replica, Requests, with_users
from serving.model_cost import model_cost
from serving.planner import KvLayout
from serving.speculation import Counters, speculation_for
from serving.speed_facts import EFFICIENCY_FILE, FittedEfficiency, hardware_for
from serving.writeup_figures import Setup, WriteupFigures, writeup_figures
from stacks.latency_fit import (
    LeaveOneOut,
    Params,
    Prediction,
    errors_by,
    figure_targets,
    fit,
    fit_figures,
    fitted_record,
    leave_one_out,
    predict,
    replica,
    rounded_params,
)

LEAVE_ONE_OUT_TITLE = (
    "leave one write-up out (each write-up predicted by a fit on the others; its clients at the time their own "
    "single request measured, that request predicted at the typical client's):"
)

# --- report -------------------------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def render(data: WriteupFigures, predictions: list[Prediction], record: FittedEfficiency, held_out: LeaveOneOut) -> str:
    loo = {p.figure.id: p for p in held_out.predictions}
    rows = [("figure", "quantity", "printed", "predicted", "error", "left out", "target +-", "use", "note")]
    for p in predictions:
        error = "-" if p.error is None else f"{p.error:+.0%}"
        other = loo.get(p.figure.id)
        other_error = "-" if other is None or other.error is None else f"{other.error:+.0%}"
        flag = " (flagged)" if p.figure.flagged else ""
        rows.append(
            (
                p.figure.id,
                p.figure.quantity,
                p.figure.printed,
                _number(p.predicted),
                error,
                other_error,
                f"{p.figure.error:.0%}",
                p.figure.use.value + flag,
                (p.note if p.predicted is not None or not p.figure.flagged else p.figure.why)[:100],
            )
        )
    lines = _table(rows)
    lines += ["", "fitted factors (all write-ups):"]
    for family, factors in record.families.items():
        lines.append(
            f"  {family.upper()}: compute {factors.compute:.3f} of peak, bandwidth {factors.bandwidth:.3f} of peak, "
            f"{factors.step_ms:.2f} ms a forward pass"
        )
    low, high = record.sweep_output_bounds
    lines.append(
        "  clients (each write-up's time outside the server): "
        + ", ".join(f"{w} {v * 1000:.0f} ms" for w, v in sorted(record.client_s_by_writeup.items()))
        + f" (typical, what advise assumes: {record.client_s * 1000:.0f} ms)"
    )
    lines.append(
        f"  shared: host {record.host_us_per_token:.1f} us a prompt token "
        f"(one vCPU); sweep output {record.sweep_output_tokens} tokens (nuisance, bounded {low}-{high} by B-02/B-03)"
    )
    lines += ["", "median |error| of the unflagged, predicted figures (fitted on all write-ups):"]
    lines += [f"  {e.quantity:<20} n={e.figures:<3} median {e.median:.0%}, worst {e.worst:.0%}" for e in record.errors]
    lines += ["", "by write-up (fitted on all write-ups):"]
    lines += [
        f"  {e.quantity:<20} n={e.figures:<3} median {e.median:.0%}, worst {e.worst:.0%}"
        for e in errors_by(predictions, lambda p: f"{data.setup_of(p.figure).writeup} {p.figure.quantity}")
    ]
    lines += ["", LEAVE_ONE_OUT_TITLE]
    for writeup, params in held_out.params.items():
        fitted = ", ".join(f"{f} c {x.compute:.2f} b {x.bandwidth:.2f} s {x.step_ms:.1f}ms" for f, x in params.families)
        lines.append(
            f"  without {writeup}: {fitted}, clients "
            + ", ".join(f"{c} {v * 1000:.0f}" for c, v in params.clients)
            + f" ms, host "
            f"{params.host_us_per_token:.1f} us, output {params.sweep_output_tokens}"
        )
    lines += [
        f"  {e.quantity:<20} n={e.figures:<3} median {e.median:.0%}, worst {e.worst:.0%}"
        for e in errors_by(held_out.predictions, lambda p: f"{data.setup_of(p.figure).writeup} {p.figure.quantity}")
    ]
    lines += ["  all write-ups, each left out in turn:"]
    lines += [
        f"  {e.quantity:<20} n={e.figures:<3} median {e.median:.0%}, worst {e.worst:.0%}"
        for e in record.errors_leave_one_out
    ]
    lines += ["", "the error advise states, by family and kind of workload (fitted / left out):"]
    lines += [
        f"  {e.family.upper()} {e.kind:<14} n={e.figures:<3} median {e.median or 0:.0%}"
        + ("" if e.leave_one_out is None else f", left out {e.leave_one_out:.0%}")
        for e in record.errors_by_kind
    ]
    lines += ["", "by term of the model (the counted figures each term is part of; fitted / left out):"]
    lines += term_errors(data, predictions, held_out.predictions)
    counted = [p for p in predictions if p.counted]
    skipped = sum(1 for p in predictions if p.predicted is None)
    flagged = sum(1 for p in predictions if p.predicted is not None and p.figure.flagged)
    lines.append(
        f"\n{len(predictions)} figures, {len(predictions) - skipped} predicted ({len(counted)} counted, {flagged} "
        f"flagged), {skipped} not (no workload or no catalog variant: the note says why)"
    )
    return "\n".join(lines) + "\n"


# Which figures each term of the model is part of (docs/advisor.md states each term's error from these lines).
TERMS: tuple[tuple[str, Callable[[Setup, Prediction], bool]], ...] = (
    ("prefix reuse (cached prompt tokens)", lambda setup, p: "prompt tokens cached" in p.note),
    ("cold prompts (no hit)", lambda setup, p: "prompt tokens cached" not in p.note),
    ("speculative decoding (MTP)", lambda setup, p: setup.mtp_tokens > 0),
    ("tensor parallel (all-reduces)", lambda setup, p: setup.chips > 1),
    ("MoE experts", lambda setup, p: catalog_model(setup.model).kind == "moe"),
    ("host-bound (tokenising)", lambda setup, p: "host CPUs" in p.note),
)


def term_errors(data: WriteupFigures, predictions: list[Prediction], held_out: list[Prediction]) -> list[str]:
    """Median |error| of the counted figures each term of the model is part of, fitted and left out (a term
    is judged on the fitted prediction's state: its cache hits, the host's load)."""
    loo = {p.figure.id: p for p in held_out}
    lines = []
    for term, applies in TERMS:
        mine = [p for p in predictions if p.counted and applies(data.setup_of(p.figure), p)]
        fitted = [abs(p.error or 0.0) for p in mine]
        left_out = [abs(loo[p.figure.id].error or 0.0) for p in mine if p.figure.id in loo and loo[p.figure.id].counted]
        if not fitted:
            lines.append(f"  {term:<38} no counted figure checks it")
            continue
        tail = f", left out {statistics.median(left_out):.0%}" if left_out else ""
        lines.append(f"  {term:<38} n={len(fitted):<3} median {statistics.median(fitted):.0%}{tail}")
    return lines


def conclusions(data: WriteupFigures, params: Params) -> str:
    """The write-ups' own conclusions, as the fitted model answers them (docs/advisor.md)."""
    lines = ["", "the write-ups' conclusions, from the model (fitted factors):"]
    lines += _mtp_on_rtx(data, params)
    lines += _one_chip_against_four(data, params)
    setup = data.setups["e-2xl4-31b-nvfp4"]
    served = replica(setup, Requests(20, 512), params)
    if not isinstance(served, str):
        state = with_users(served, Requests(20, 512), 1)
        lines.append(
            f"  31B NVFP4 at TP 2 on two L4s (PCIe Gen4), one stream: {1 / state.tpot_s:.1f} tok/s "
            "(write-up E measured 15.1, E-10)"
        )
    return "\n".join(lines) + "\n"


def _rtx(setup: Setup, params: Params, variant: str, mtp: tuple[int, Counters | None]) -> Replica:
    """Write-up A's GPU serving ``variant`` of its model, MTP-``k`` at the counters' acceptance (None: default)."""
    model = catalog_model(setup.model)
    draft_tokens, counters = mtp
    hardware = hardware_for(setup.accelerator, host_vcpus=setup.host.vcpu)
    efficiency = FittedEfficiency.efficiency_of(params.family("gpu"), params.client_s, params.host_us_per_token)
    speculation = speculation_for(model, variant, draft_tokens, counters=counters) if draft_tokens else None
    cost = model_cost(model, variant, kv_cache_dtype=setup.kv_cache_dtype)
    return Replica(cost, hardware, efficiency, batch_cap=256, speculation=speculation)


def _mtp_on_rtx(data: WriteupFigures, params: Params) -> list[str]:
    """Write-up A: MTP-3 helps at one user and 16K tokens, loses at 128 users and 1K (256 output tokens each)."""
    setup = data.setups["a-rtx-12b-qat-mtp3"]
    assert setup.mtp_counters is not None
    measured = Counters(setup.mtp_counters.drafts, setup.mtp_counters.accepted, 3, setup.mtp_counters.why)
    lines = []
    for variant, counters, label in (
        ("bf16", None, "bf16 12B, the default acceptance of a matched drafter"),
        (setup.variant or "", measured, "the QAT w4a16 12B A and B ran, at B's measured 5.5% acceptance"),
    ):
        plain, mtp = _rtx(setup, params, variant, (0, None)), _rtx(setup, params, variant, (3, counters))
        one, many = Requests(16384, 256), Requests(1024, 256)
        single = with_users(mtp, one, 1).tpot_s / with_users(plain, one, 1).tpot_s - 1
        batch = with_users(mtp, many, 128).request_rate / with_users(plain, many, 128).request_rate - 1
        lines.append(
            f"  MTP-3 on A's {hardware_for(setup.accelerator).name} ({label}): 1 user at 16K tokens TPOT "
            f"{single:+.0%}; 128 users at 1K req/s {batch:+.0%}"
        )
    return lines


def _one_chip_against_four(data: WriteupFigures, params: Params) -> list[str]:
    """Write-up C and the brief: the 12B is faster on one TPU chip than sharded over four (per chip; 1K tokens)."""
    requests = Requests(1024, 128)
    rates = {}
    for name in ("c-v6e1-12b-bf16", "c-v6e4-12b-bf16"):
        setup = data.setups[name]
        assert setup.variant is not None
        hardware = hardware_for(setup.accelerator, setup.chips, host_vcpus=setup.host.vcpu)
        efficiency = FittedEfficiency.efficiency_of(params.family("tpu"), params.client_s, params.host_us_per_token)
        cost = model_cost(
            catalog_model(setup.model),
            setup.variant,
            kv_cache_dtype=setup.kv_cache_dtype,
            tensor_parallel=setup.chips,
            layout=KvLayout.TPU,
        )
        served = Replica(cost, hardware, efficiency, batch_cap=64, batched_tokens=1024)
        rates[setup.chips] = with_users(served, requests, 64).request_rate
    name = hardware_for(data.setups["c-v6e1-12b-bf16"].accelerator).name
    line = (
        f"  12B bf16 at 1K tokens and 64 users a replica on {name}: one chip {rates[1]:.1f} req/s, four chips at "
        f"TP 4 {rates[4] / 4:.1f} req/s a chip ({rates[4]:.1f} for the four): four one-chip replicas serve "
        f"{4 * rates[1] / rates[4]:.1f}x the sharded four"
    )
    return [line]


@dataclass(frozen=True)
class Run:
    params: Params
    predictions: list[Prediction]
    held_out: LeaveOneOut
    record: FittedEfficiency


def run(*, today: datetime.date | None = None) -> Run:
    data = writeup_figures()
    params = rounded_params(fit(figure_targets(data, fit_figures(data))))
    predictions = [predict(data, figure, params) for figure in data.figures]
    held_out = leave_one_out(data)
    day = today or datetime.datetime.now(tz=datetime.UTC).date()
    return Run(params, predictions, held_out, fitted_record(data, params, predictions, held_out, day))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.writeup_figures",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--write", action="store_true", help=f"store the fit in {EFFICIENCY_FILE.name}")
    args = parser.parse_args(argv)
    result = run()
    sys.stdout.write(render(writeup_figures(), result.predictions, result.record, result.held_out))
    sys.stdout.write(conclusions(writeup_figures(), result.params))
    if args.write:
        EFFICIENCY_FILE.write_text(json.dumps(result.record.model_dump(mode="json", by_alias=True), indent=2) + "\n")
        print(f"wrote {EFFICIENCY_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
