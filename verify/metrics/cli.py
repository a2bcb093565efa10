"""`verify metrics`: flags, the printed report and the exit code (0 read, 1 not vLLM's metrics, 2 unreachable)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from remote.text import escape_controls
from verify.argtypes import positive_number
from verify.endpoint import resolve_target
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options
from verify.metrics.reading import MetricsReadError, MetricsReport
from verify.metrics.run import MAX_WINDOW_S, MetricsOptions, run_metrics
from verify.numbers import percent, readable

EXIT_NOT_VLLM = 1
EXIT_UNREACHABLE = 2
_LATENCY_NAMES = {
    "ttft": "time to first token",
    "queue": "queue time",
    "itl": "inter-token latency",
    "e2e": "end-to-end latency",
    "prefill": "prefill time",
    "decode": "decode time",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify metrics`` to the CLI."""
    parser = subparsers.add_parser(
        "metrics",
        help="read vLLM's /metrics: load, KV cache, prefix cache, preemptions, latency means and percentiles",
        description="Read vLLM's /metrics once (since the server started) or twice --window seconds apart "
        "(that window only): requests running and waiting, KV-cache usage, prefix-cache hits, preemptions, "
        "TTFT/queue/ITL/end-to-end means and percentiles (as the histogram bucket each falls in), "
        "speculative-decoding acceptance overall and per draft position. Exit codes: 0 read, 1 not vLLM's "
        "metrics, 2 usage error or endpoint unreachable/unauthorised.",
    )
    add_target_arguments(parser)
    parser.add_argument(
        "--window",
        type=_window,
        metavar="S",
        help=f"read twice, S seconds apart, and report that window only (at most {MAX_WINDOW_S:g})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the report")
    parser.set_defaults(handler=run_metrics_command)


def _window(value: str) -> float:
    seconds = positive_number("--window", "seconds")(value)
    if seconds > MAX_WINDOW_S:
        raise argparse.ArgumentTypeError(f"--window must be at most {MAX_WINDOW_S:g} seconds, got {value!r}")
    return seconds


def run_metrics_command(args: argparse.Namespace) -> int:
    target = resolve_target(target_options(args))
    options = MetricsOptions(window_s=args.window, timeouts=timeout_options(args), api_key_env=args.api_key_env)
    try:
        report = run_metrics(target, options)
    except MetricsReadError as exc:
        print(f"metrics: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE if exc.unreachable else EXIT_NOT_VLLM
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_report(report, sys.stdout)
    return 0


def _at_most(value: float | None, last_bound: float | None, count: int) -> str:
    if count == 0:
        return "-"
    return f"<={readable(value)}" if value is not None else f">{readable(last_bound)}"


def print_report(report: MetricsReport, out: TextIO) -> None:
    lines = [
        f"vLLM metrics of {report.base_url} ({', '.join(report.model_names) or 'no model label'})",
        f"window: {report.window.describe()}",
        (
            f"requests running {readable(report.running)}, waiting {readable(report.waiting)}; "
            f"KV-cache usage {percent(report.kv_cache_usage)}"
        ),
        (
            f"prefix cache: {readable(report.prefix_cache_hits)} of {readable(report.prefix_cache_queries)} tokens "
            f"hit ({percent(report.prefix_cache_hit_rate)}); preemptions {readable(report.preemptions)}"
        ),
        f"tokens: prompt {readable(report.prompt_tokens)}, generated {readable(report.generation_tokens)}",
        "latency (ms; the mean is exact, a percentile is the histogram bucket it falls in):",
    ]
    for name, found in report.latency.items():
        shown = ", ".join(
            f"{key} {_at_most(value, found.last_bound_ms, found.count)}"
            for key, value in found.percentiles_at_most_ms.items()
        )
        lines.append(
            f"  {_LATENCY_NAMES.get(name, name):<22} n={found.count:<7} mean {readable(found.mean_ms)}, {shown}"
        )
    for name, why in report.unreadable.items():
        lines.append(f"  {_LATENCY_NAMES.get(name, name):<22} unreadable, left out: {why}")
    spec = report.spec_decode
    if spec is None:
        lines.append("speculative decoding: off (no vllm:spec_decode_* series)")
    else:
        positions = ", ".join(f"{k}: {percent(rate)}" for k, rate in enumerate(spec.acceptance_by_position))
        lines.append(
            f"speculative decoding: acceptance {percent(spec.acceptance_rate)} of {readable(spec.draft_tokens)} "
            f"drafted tokens, mean acceptance length {readable(spec.mean_acceptance_length)}; by position "
            f"{positions or '-'}"
        )
    # Model names, labels and the reasons a histogram is unreadable are the server's text: one line each, escaped.
    out.write("".join(escape_controls(line, keep_newlines=False) + "\n" for line in lines))
