"""`python -m benchmarks.writeup_figures`: every write-up figure beside the latency model's prediction and error.

The figures (serving/data/writeup-figures.json) were measured by hand in public write-ups: targets with their own
error, not truths. This script fits the model's three efficiencies and one nuisance to the figures marked
``fit``, predicts every figure it can (``holdout`` figures were kept out of the fit to check it), prints each
with its error, and summarises the errors by quantity. ``--write`` stores the fit in
serving/data/latency-efficiency.json, which every estimate (gemma-verify advise) reads.

How the fit works (docs/advisor.md): one factor at a time, each on the figures it alone moves, weighted by
1 / error^2, minimising the squared log ratio predicted / measured; two rounds, because the single-request TTFTs
also depend on the bandwidth factor and the sweeps on all of them.
1. bandwidth efficiency: single-stream decode rates (tok/s), closed form (the rate is proportional to it);
2. client time (network, HTTP): single short-request TTFTs;
3. compute efficiency: the one cold-prefill sweep cell (v6e-4, 16,384 tokens; its 8,192 sibling is held out).
   No GPU figure measures a cold prefill: fitting write-up B's L4 cells gives 0.93 of the L4's peak, and A-08
   (16K tokens, one user, 1.17 s on the RTX PRO 6000) implies 0.86, both beyond what vLLM reaches without
   prefix-cache hits (the sweeps reused their prompts). So the GPUs borrow the TPU's factor: slower prefill,
   the safe side of a TTFT SLO, until a measured cell (gemma-verify bench) replaces the estimate;
4. sweep output tokens (never stated by the write-ups): write-up B's no-MTP L4 cells at 128 tokens and 8 and 64
   users, on the grid 1 to 32.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from serving.accelerators import CLOUD_RUN_GPUS, TPU_CHIPS, Accelerator
from serving.catalog import catalog_model
from serving.latency import Efficiency, Replica, Requests, model_cost, with_users
from serving.planner import GB, GIB, KvLayout, PlanInputs, plan_capacity
from serving.speed_facts import EFFICIENCY_FILE, FittedEfficiency, FittedError, hardware_for
from serving.writeup_figures import Figure, Setup, Use, WriteupFigures, writeup_figures
from stacks.capacity import (
    GPU_BLOCK_SIZE,
    GPU_RUNTIME_OVERHEAD_GIB_PER_GPU,
    LARGE_GPU_BATCHED_TOKENS,
    LARGE_GPU_MIN_GIB,
    SMALL_GPU_BATCHED_TOKENS,
    TPU_BLOCK_SIZE,
    TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP,
    TPU_V6E_BATCHED_TOKENS,
)

# vLLM's --max-num-seqs when a write-up does not state one (vLLM 0.32's default for the OpenAI server).
DEFAULT_MAX_NUM_SEQS = 256
# The usable share of device memory: vLLM's default --gpu-memory-utilization on GPUs; on the TPU the v6e-4 log's
# own 114.99 / 124.98 GiB (C-01, C-02).
GPU_UTILISATION = 0.90
TPU_UTILISATION = 114.99 / 124.98
# The grids the one-dimensional fits search (the bandwidth factor has a closed form).
CLIENT_GRID = tuple(i / 200 for i in range(101))
COMPUTE_GRID = tuple(i / 40 for i in range(1, 41))
OUTPUT_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
ROUNDS = 2
# What the write-ups' sweeps predicted as, before the fit and the starting point of the fit.
START = {"compute_gpu": 0.5, "compute_tpu": 0.5, "bandwidth": 0.5, "client_s": 0.1, "sweep_output_tokens": 4}


@dataclass(frozen=True)
class Params:
    compute_gpu: float
    compute_tpu: float
    bandwidth: float
    client_s: float
    sweep_output_tokens: int

    def efficiency(self, setup: Setup) -> Efficiency:
        tpu = setup.accelerator is Accelerator.TPU_V6E
        compute = self.compute_tpu if tpu else self.compute_gpu
        return Efficiency(compute=compute, bandwidth=min(self.bandwidth, 1.0), client_s=self.client_s)


@dataclass(frozen=True)
class Prediction:
    figure: Figure
    predicted: float | None
    note: str
    # The figure implies more prompt FLOP/s than the hardware's peak (x times it): prefix-cache hits.
    above_ceiling: float | None = None

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 (None: not predicted, or a measured zero)."""
        if self.predicted is None or not self.figure.value:
            return None
        return self.predicted / self.figure.value - 1


def _layout(setup: Setup) -> KvLayout:
    return KvLayout.TPU if setup.accelerator is Accelerator.TPU_V6E else KvLayout.VLLM_HYBRID


def _device_bytes(setup: Setup) -> int:
    if setup.accelerator is Accelerator.TPU_V6E:
        return round(TPU_CHIPS[setup.accelerator].hbm_gib_per_chip * GIB)
    return round(CLOUD_RUN_GPUS[setup.accelerator].memory_gib * GIB)


def _batched_tokens(setup: Setup) -> int:
    """The setup's --max-num-batched-tokens, or vLLM 0.32's default for the accelerator (stacks/capacity.py)."""
    if setup.batched_tokens is not None:
        return setup.batched_tokens
    if setup.accelerator is Accelerator.TPU_V6E:
        return TPU_V6E_BATCHED_TOKENS
    large = CLOUD_RUN_GPUS[setup.accelerator].memory_gib >= LARGE_GPU_MIN_GIB
    return LARGE_GPU_BATCHED_TOKENS if large else SMALL_GPU_BATCHED_TOKENS


def plan_inputs(setup: Setup, sequence_tokens: int) -> PlanInputs:
    """The capacity planner's inputs for a write-up setup serving sequences of ``sequence_tokens``."""
    assert setup.variant is not None
    model = catalog_model(setup.model)
    tpu = setup.accelerator is Accelerator.TPU_V6E
    overhead = (
        TPU_RUNTIME_OVERHEAD_GIB_PER_CHIP * setup.chips if tpu else GPU_RUNTIME_OVERHEAD_GIB_PER_GPU * setup.chips
    )
    return PlanInputs(
        model=model.profile_file(setup.variant).to_profile(),
        max_model_len=setup.max_model_len or sequence_tokens,
        max_num_seqs=setup.max_num_seqs or DEFAULT_MAX_NUM_SEQS,
        kv_cache_dtype=setup.kv_cache_dtype,
        device_memory_bytes=_device_bytes(setup),
        gpu_memory_utilization=TPU_UTILISATION if tpu else GPU_UTILISATION,
        tensor_parallel_size=setup.chips,
        runtime_overhead_bytes=round(overhead * GIB),
        layout=_layout(setup),
        block_size=TPU_BLOCK_SIZE if tpu else GPU_BLOCK_SIZE,
        workload_tokens=min(sequence_tokens, setup.max_model_len or sequence_tokens),
        accelerator_label=setup.accelerator.value,
    )


def replica(setup: Setup, requests: Requests, efficiency: Efficiency) -> Replica | str:
    """The load model's replica for a setup, or why there is none (weights do not fit, ...)."""
    assert setup.variant is not None
    plan = plan_capacity(plan_inputs(setup, requests.prompt_tokens + requests.output_tokens))
    if not plan.fits or plan.workload_concurrency is None:
        return "; ".join(finding.message for finding in plan.errors) or "no KV capacity"
    cap = min(setup.max_num_seqs or DEFAULT_MAX_NUM_SEQS, math.floor(plan.workload_concurrency))
    if cap < 1:
        return "not one request of this workload fits the KV cache"
    cost = model_cost(
        catalog_model(setup.model),
        setup.variant,
        kv_cache_dtype=setup.kv_cache_dtype,
        tensor_parallel=setup.chips,
        layout=_layout(setup),
    )
    hardware = hardware_for(setup.accelerator, setup.chips)
    return Replica(cost, hardware, efficiency, batch_cap=cap, batched_tokens=_batched_tokens(setup))


def predict(data: WriteupFigures, figure: Figure, params: Params) -> Prediction:
    """The model's value for one figure, or why it has none."""
    setup = data.setup_of(figure)
    if figure.use is Use.SKIP or figure.value is None:
        return Prediction(figure, None, figure.why)
    if setup.variant is None:
        return Prediction(figure, None, f"not in the catalog: {setup.note}")
    if figure.use is Use.MEMORY:
        return _memory(setup, figure)
    workload = figure.workload
    sweep = workload.output_tokens is None
    output = params.sweep_output_tokens if sweep else workload.output_tokens
    assert workload.prompt_tokens is not None
    assert workload.users is not None
    assert output is not None
    requests = Requests(workload.prompt_tokens, output)
    served = replica(setup, requests, params.efficiency(setup))
    if isinstance(served, str):
        return Prediction(figure, None, f"the planner refuses it: {served}")
    above = _above_prefill_ceiling(figure, served, requests)
    state = with_users(served, requests, workload.users)
    value = {
        "request_rate": state.request_rate,
        "latency_s": state.latency_mean_s,
        "ttft_s": state.ttft_mean_s,
        "decode_tokens_per_s": 1 / state.tpot_s,
        "total_s": state.latency_mean_s,
    }.get(figure.quantity)
    note = f"batch cap {served.batch_cap}" + (f", {output} output tokens (fitted)" if sweep else "")
    if above is not None:
        note = f"{above:.1f}x the cold-prefill ceiling: prefix-cache hits, not counted in the errors; " + note
    return Prediction(figure, value, note if value is not None else f"no prediction for {figure.quantity}", above)


def _above_prefill_ceiling(figure: Figure, served: Replica, requests: Requests) -> float | None:
    """How many times the peak FLOP/s a sweep figure's prompts would need (None: within it). A closed loop's
    latency implies its rate: users / latency."""
    if figure.value is None or figure.workload.users is None:
        return None
    rate = {"request_rate": figure.value, "latency_s": figure.workload.users / figure.value}.get(figure.quantity)
    if rate is None:
        return None
    hardware = served.hardware
    needed = rate * served.model.prefill_flops(requests.prompt_tokens) / (hardware.chips * hardware.peak_flops)
    return needed if needed > 1 else None


def _memory(setup: Setup, figure: Figure) -> Prediction:
    """Memory figures: the capacity planner, first principles (its runtime overhead an estimate)."""
    plan = plan_capacity(plan_inputs(setup, setup.max_model_len or 4096))
    values = {
        "weights_and_overhead_gib": (plan.weight_bytes + plan.inputs.runtime_overhead_bytes) / GIB,
        "kv_budget_gib": plan.kv_budget_bytes / GIB,
        "kv_cache_tokens": float(plan.capacity_tokens),
        "max_concurrency": plan.max_concurrency,
        "weights_gb": plan.weight_bytes / GB,
    }
    value = values.get(figure.quantity)
    return Prediction(
        figure, value, "capacity planner" if value is not None else f"no planner figure {figure.quantity}"
    )


# --- the fit ------------------------------------------------------------------------------------------------


def _loss(predictions: Iterable[Prediction]) -> float:
    total = 0.0
    for prediction in predictions:
        if prediction.predicted is None or not prediction.figure.value or prediction.predicted <= 0:
            total += 100.0
            continue
        ratio = math.log(prediction.predicted / prediction.figure.value)
        total += (ratio / prediction.figure.error) ** 2
    return total


def _figures(data: WriteupFigures, use: Use, quantities: set[str], test: Callable[[Figure], bool]) -> list[Figure]:
    return [f for f in data.figures if f.use is use and f.quantity in quantities and test(f)]


def fit(data: WriteupFigures) -> Params:
    """Coordinate-wise weighted least squares in log space over the ``fit`` figures (module docstring)."""
    params = Params(**START)  # type: ignore[arg-type]
    decode = _figures(data, Use.FIT, {"decode_tokens_per_s"}, lambda _: True)
    ttft = _figures(data, Use.FIT, {"ttft_s"}, lambda _: True)

    def tpu(figure: Figure) -> bool:
        return data.setup_of(figure).accelerator is Accelerator.TPU_V6E

    rates = _figures(data, Use.FIT, {"request_rate"}, lambda _: True)
    for _ in range(ROUNDS):
        at_one = _with(params, bandwidth=1.0)
        weights = [1 / f.error**2 for f in decode]
        logs = [math.log(f.value / (predict(data, f, at_one).predicted or 1)) for f in decode if f.value]
        params = _with(
            params, bandwidth=min(math.exp(sum(w * x for w, x in zip(weights, logs, strict=True)) / sum(weights)), 1.0)
        )
        params = _best(data, params, "client_s", CLIENT_GRID, ttft)
        params = _best(data, params, "compute_tpu", COMPUTE_GRID, [f for f in rates if tpu(f)])
        # No GPU figure measures a cold prefill (module docstring): the GPUs borrow the TPU's factor.
        params = _with(params, compute_gpu=params.compute_tpu)
        params = _best(data, params, "sweep_output_tokens", OUTPUT_GRID, [f for f in rates if not tpu(f)])
    return params


def _with(params: Params, **changes: float) -> Params:
    values = {**params.__dict__, **changes}
    values["sweep_output_tokens"] = int(values["sweep_output_tokens"])
    return Params(**values)


def _best(data: WriteupFigures, params: Params, name: str, grid: Iterable[float], figures: list[Figure]) -> Params:
    candidates = [_with(params, **{name: value}) for value in grid]
    return min(candidates, key=lambda p: _loss(predict(data, f, p) for f in figures))


# --- report -------------------------------------------------------------------------------------------------


def errors_by_quantity(predictions: Iterable[Prediction]) -> tuple[FittedError, ...]:
    grouped: dict[str, list[float]] = {}
    for prediction in predictions:
        if prediction.error is not None and prediction.above_ceiling is None:
            grouped.setdefault(prediction.figure.quantity, []).append(abs(prediction.error))
    return tuple(
        FittedError(quantity=q, figures=len(v), median=round(statistics.median(v), 3), worst=round(max(v), 3))
        for q, v in sorted(grouped.items())
    )


def fitted_record(
    data: WriteupFigures, params: Params, predictions: list[Prediction], day: datetime.date
) -> FittedEfficiency:
    def of(use: Use) -> list[Prediction]:
        return [p for p in predictions if p.figure.use is use and not p.figure.flagged]

    return FittedEfficiency(
        about="The latency model's efficiencies (serving/latency.py), fitted to the write-up figures "
        "(serving/data/writeup-figures.json) by benchmarks/writeup_figures.py --write; the errors are "
        "|predicted / measured - 1| by quantity, unflagged figures only. Re-run it when the figures or the model "
        "change.",
        fitted=day,
        method=" ".join((__doc__ or "").split("How the fit works (docs/advisor.md):", 1)[-1].split()),
        compute_gpu=params.compute_gpu,
        compute_tpu=params.compute_tpu,
        bandwidth=round(params.bandwidth, 4),
        client_s=params.client_s,
        sweep_output_tokens=params.sweep_output_tokens,
        fitted_on=tuple(f.id for f in data.figures if f.use is Use.FIT),
        held_out=tuple(f.id for f in data.figures if f.use is Use.HOLDOUT),
        errors_fitted=errors_by_quantity(of(Use.FIT)),
        errors_held_out=errors_by_quantity(of(Use.HOLDOUT)),
        errors_checked=errors_by_quantity(of(Use.CHECK)),
    )


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def render(predictions: list[Prediction], record: FittedEfficiency) -> str:
    rows = [("figure", "quantity", "printed", "predicted", "error", "target +-", "use", "note")]
    for p in predictions:
        error = "-" if p.error is None else f"{p.error:+.0%}"
        flag = " (flagged)" if p.figure.flagged else ""
        rows.append(
            (
                p.figure.id,
                p.figure.quantity,
                p.figure.printed,
                _number(p.predicted),
                error,
                f"{p.figure.error:.0%}",
                p.figure.use.value + flag,
                p.note[:90],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += [
        "",
        (
            f"fitted: compute GPU {record.compute_gpu:.3f} TPU {record.compute_tpu:.3f}, bandwidth "
            f"{record.bandwidth:.3f}, client {record.client_s * 1000:.0f} ms, "
            f"sweep output {record.sweep_output_tokens} tokens (on {len(record.fitted_on)} figures; "
            f"held out: {', '.join(record.held_out)})"
        ),
    ]
    for label, errors in (
        ("fitted", record.errors_fitted),
        ("held out", record.errors_held_out),
        ("checked", record.errors_checked),
    ):
        for e in errors:
            lines.append(
                f"  {label:<9} {e.quantity:<20} n={e.figures:<3} median |error| {e.median:.0%}, worst {e.worst:.0%}"
            )
    above = sum(1 for p in predictions if p.above_ceiling is not None)
    lines.append(
        f"{above} figures need more than the hardware's peak FLOP/s for their prompts (prefix-cache hits): not counted"
    )
    skipped = sum(1 for p in predictions if p.predicted is None)
    lines.append(
        f"{len(predictions)} figures, {len(predictions) - skipped} predicted, {skipped} not (the note says why)"
    )
    return "\n".join(lines) + "\n"


def run(*, today: datetime.date | None = None) -> tuple[list[Prediction], FittedEfficiency]:
    data = writeup_figures()
    params = fit(data)
    predictions = [predict(data, figure, params) for figure in data.figures]
    return predictions, fitted_record(data, params, predictions, today or datetime.datetime.now(tz=datetime.UTC).date())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.writeup_figures",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--write", action="store_true", help=f"store the fit in {EFFICIENCY_FILE.name}")
    args = parser.parse_args(argv)
    predictions, record = run()
    sys.stdout.write(render(predictions, record))
    if args.write:
        EFFICIENCY_FILE.write_text(json.dumps(record.model_dump(mode="json", by_alias=True), indent=2) + "\n")
        print(f"wrote {EFFICIENCY_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
