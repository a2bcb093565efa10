"""`gemma-verify alerts suggest --from RESULTS.jsonl`: the stack file's thresholds from its own bench sweep.

Exit codes: 0 a snippet printed; 1 the sweep missed the SLO at its lowest concurrency (nothing to derive
from); 2 usage error (no such file, no measured cell).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from verify.alerts.suggest import (
    MAX_TPOT_MS,
    MAX_TTFT_MS,
    PERCENTILES,
    Slo,
    SloMissedEverywhereError,
    SuggestOptions,
    stack_snippet,
    suggest_from_file,
)
from verify.argtypes import positive_int, positive_number

EXIT_OK = 0
EXIT_SLO_MISSED = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `verify alerts suggest` to the CLI."""
    alerts = subparsers.add_parser(
        "alerts",
        help="alert thresholds for a stack, derived from its bench results",
        description="Alert thresholds for a stack's monitoring block (stacks/monitoring.py).",
    )
    actions = alerts.add_subparsers(dest="alerts_command", metavar="ACTION", required=True)
    parser = actions.add_parser(
        "suggest",
        help="derive queue and latency thresholds from a bench sweep; print them as a stack-file snippet",
        description="Reads a `gemma-verify bench` results file, finds the highest concurrency whose every cell met "
        "the SLO and the first that did not, and prints the stack file's gemma-serving:monitoring block with "
        "TTFT/TPOT thresholds (vLLM histogram buckets), a queue-time limit and, with --max-num-seqs, a "
        "waiting-requests limit. Paste it under `config:`. Exit codes: 0 printed, 1 the SLO was missed even at "
        "the lowest concurrency, 2 usage error.",
    )
    parser.add_argument(
        "--from", dest="results", type=Path, required=True, metavar="FILE.jsonl", help="a bench results file"
    )
    parser.add_argument(
        "--ttft-ms",
        type=_bounded("--ttft-ms", MAX_TTFT_MS),
        default=Slo.ttft_ms,
        metavar="MS",
        help=f"the SLO's TTFT bound at --percentile (default {Slo.ttft_ms:g}, vLLM's dashboard default)",
    )
    parser.add_argument(
        "--percentile",
        type=int,
        choices=PERCENTILES,
        default=Slo.percentile,
        help=f"the percentile the SLO bounds, read from the sweep's cells (default {Slo.percentile})",
    )
    parser.add_argument(
        "--tpot-ms",
        type=_bounded("--tpot-ms", MAX_TPOT_MS),
        default=Slo.tpot_ms,
        metavar="MS",
        help=f"the SLO's TPOT bound at --percentile (default {Slo.tpot_ms:g})",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=positive_int("--max-num-seqs"),
        default=None,
        metavar="N",
        help="the stack's vllm.maxNumSeqs, to derive maxWaitingRequests",
    )
    parser.add_argument(
        "--allow-untrusted",
        action="store_true",
        help="also use cells verify bench marked untrusted (a load generator short of CPU); the snippet says so",
    )
    parser.set_defaults(handler=run_suggest)


def _bounded(flag: str, ceiling: float) -> Callable[[str], float]:
    """Milliseconds above 0 and at most ``ceiling``: `inf`, `nan` and negatives are refused naming the flag."""
    finite = positive_number(flag, "milliseconds")

    def parse(value: str) -> float:
        number = finite(value)
        if number > ceiling:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {ceiling:g} milliseconds, got {value!r}")
        return number

    return parse


def run_suggest(args: argparse.Namespace) -> int:
    path: Path = args.results
    options = SuggestOptions(
        slo=Slo(ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms, percentile=args.percentile),
        max_num_seqs=args.max_num_seqs,
        allow_untrusted=args.allow_untrusted,
    )
    try:
        suggestion = suggest_from_file(path, options)
    except SloMissedEverywhereError as exc:
        print(f"alerts suggest: {exc}", file=sys.stderr)
        return EXIT_SLO_MISSED
    sys.stdout.write(stack_snippet(suggestion, options.slo, source=path.name))
    return EXIT_OK
