"""`gemma-verify advise`: flags to ``AdviseOptions``, the ranked table or JSON, ``--write NAME``, the exit code;
and `gemma-verify calibrate`: its flags to `calibrate`'s and `run_refit`'s plain arguments.

Exit codes: 0 at least one deployment meets the SLO (and ``--write`` wrote it); 1 none does; 2 usage errors.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pydantic

from preview.stack_file import project_root
from serving.workload_choices import KV_CACHE_DTYPES
from verify import UsageError
from verify.advise.adapter_fit import DEFAULT_RANK, adapter_workload
from verify.advise.calibrate import calibrate
from verify.advise.capacity import load_capacity, with_capacity
from verify.advise.options import (
    HOURS_PER_MONTH,
    PLATFORMS,
    PROVISIONING,
    AdviseOptions,
    parse_draft_tokens,
    parse_hours,
    parse_lengths,
    parse_min_scores,
    parse_slo,
)
from verify.advise.refit import render as render_refit
from verify.advise.refit import run_refit
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise
from verify.advise.workload import load_workload, workload_options
from verify.advise.write import write_stack
from verify.advise.write_safety import NOTHING_WRITTEN, request_problems, written_message


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "advise",
        help="the cheapest model, variant, shape and replica count that meets an SLO at a load (offline)",
        description="Rank every catalog model x variant x accelerator shape the constraints allow by what it costs "
        "a month at the fewest replicas that meet the SLO at the stated load, each number with its basis (measured, "
        "or estimated by the latency model in docs/advisor.md with its stated error), then one line per reason "
        "kind for what was excluded. Offline. Exit codes: 0 a deployment meets the SLO, 1 none, 2 usage error.",
    )
    parser.add_argument("--prompt-tokens", type=int, help="prompt tokens a request")
    parser.add_argument("--output-tokens", type=int, help="output tokens a request")
    parser.add_argument(
        "--lengths",
        metavar="P:O:SHARE,...",
        help="a length distribution instead: prompt:output:share classes, e.g. 2048:256:0.7,8192:512:0.3",
    )
    parser.add_argument(
        "--reused-tokens",
        type=int,
        default=0,
        help="prompt tokens each request shares with earlier ones (a system prompt, the conversation so far): the "
        "prefix cache serves them (default 0: unknown traffic, every prompt prefilled cold)",
    )
    parser.add_argument(
        "--distinct-prefixes",
        type=int,
        default=1,
        help="how many different reused prefixes are in play at once: 1 for one shared system prompt, the users "
        "for per-user histories (their KV must stay cached for the hits; default 1)",
    )
    parser.add_argument(
        "--draft-tokens",
        default="0,2,4",
        metavar="K,...",
        help="MTP draft lengths to weigh where the catalog has a drafter, 0 = off (default 0,2,4)",
    )
    parser.add_argument(
        "--adapters",
        type=int,
        metavar="N",
        help="LoRA adapters every deployment must serve: rank only rows whose stack serves them (GPU stacks with the "
        "bucket mounted; docs/adapters.md), with their slots' memory in the capacity plan",
    )
    parser.add_argument(
        "--adapter-rank",
        type=int,
        metavar="R",
        help=f"the adapters' (largest) LoRA rank, `r` in adapter_config.json (default {DEFAULT_RANK})",
    )
    parser.add_argument(
        "--adapter-share",
        type=float,
        metavar="F",
        help="the share of requests that name an adapter, 0 < F <= 1 (default 1)",
    )
    parser.add_argument(
        "--workload",
        type=Path,
        metavar="FILE",
        help="the traffic from a YAML file instead of the workload flags: request kinds and shares, a shared system "
        "prompt, sessions, users with think time, a rate or a batch, the SLO, adapters (verify/advise/workload.py)",
    )
    parser.add_argument(
        "--think-time",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --users: seconds each user reads an answer before the next request (default 0: always in flight)",
    )
    load = parser.add_mutually_exclusive_group()
    load.add_argument("--users", type=int, help="concurrent users, each sending its next request when answered")
    load.add_argument("--rate", type=float, help="requests per second (Poisson arrivals)")
    load.add_argument(
        "--batch",
        type=int,
        metavar="REQUESTS",
        help="a batch job of this many requests (with --within): rows ranked by the cost to finish it in time, "
        "priced for the hours the job runs; spot and flex-start allowed unless --provisioning says otherwise",
    )
    parser.add_argument("--within", metavar="HOURS", help="with --batch: the hours it must finish in (6 or 6h)")
    parser.add_argument(
        "--runs-per-month",
        type=float,
        default=30.0,
        help="with --batch: how often the job runs a month (default 30: nightly; 4.3 weekly, 1 once)",
    )
    parser.add_argument(
        "--slo", action="append", default=[], metavar="KEY=VALUE", help="p95_ttft_ms, p95_tpot_ms or goodput (req/s)"
    )
    parser.add_argument("--platform", action="append", choices=PLATFORMS, help="allowed platforms (default: all)")
    parser.add_argument(
        "--region",
        help="the region to deploy in (default: us-central1, us-east5 for TPU; a shape offered in neither: the region "
        "of its first zone)",
    )
    parser.add_argument(
        "--provisioning",
        action="append",
        choices=PROVISIONING,
        help="TPU provisioning models allowed (repeatable; default: on-demand)",
    )
    parser.add_argument(
        "--model",
        "--models",
        action="append",
        metavar="ID[,ID...]",
        help="catalog ids to consider, one ranking across them (repeatable or comma-separated; default: all, the "
        "cheapest deployment of each model, best model first)",
    )
    parser.add_argument(
        "--min-score",
        action="append",
        default=[],
        metavar="BENCHMARK=SCORE",
        help="a quality floor on a model card benchmark (mmlu_pro, gpqa_diamond, aime_2026, livecodebench_v6, "
        "codeforces_elo; serving/data/model-quality.json): one ranking of the models that meet it",
    )
    parser.add_argument("--one-ranking", action="store_true", help="one ranking across every model, cheapest first")
    parser.add_argument("--variant", action="append", help="variants to consider (repeatable; default: all)")
    parser.add_argument("--budget", type=float, metavar="USD", help="most it may cost a month")
    parser.add_argument(
        "--active-hours",
        type=float,
        default=HOURS_PER_MONTH,
        help=f"hours a month with traffic, for platforms that scale to zero (default {HOURS_PER_MONTH:g})",
    )
    parser.add_argument("--max-replicas", type=int, default=16, help="most replicas to consider (default 16)")
    dtypes = ", ".join(KV_CACHE_DTYPES)
    parser.add_argument("--kv-cache-dtype", default="fp8", help=f"the KV cache's element type: {dtypes} (default fp8)")
    parser.add_argument("--top", type=int, default=10, help="rows to print (default 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--write", metavar="NAME", help="write Pulumi.NAME.yaml for the chosen row (rank 1 by default)")
    parser.add_argument("--pick", type=int, default=1, metavar="RANK", help="the row --write writes (default 1)")
    parser.add_argument("--revision", help="the 40-hex commit --write pins (default: the one a shipped stack pins)")
    parser.add_argument(
        "--drafter-revision", help="the 40-hex commit of the MTP drafter --write pins, for a row that drafts"
    )
    parser.add_argument("--force", action="store_true", help="let --write replace an existing stack file")
    parser.add_argument(
        "--peak-factor",
        type=float,
        default=2.0,
        help="the peak as a multiple of the stated load: --write's autoscaler may grow to its replicas (default 2)",
    )
    parser.add_argument(
        "--capacity",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a saved `gemma-verify preflight --stack NAME --json` of a TPU stack: rows in a zone and tier it says "
        "cannot be granted say so (no Google call; repeatable)",
    )
    parser.set_defaults(handler=_advise, advise_parser=parser)


# The flags a workload file replaces (dest: the default that means "not given").
_WORKLOAD_FLAGS: dict[str, object] = {
    "prompt_tokens": None,
    "output_tokens": None,
    "lengths": None,
    "users": None,
    "rate": None,
    "batch": None,
    "within": None,
    "slo": [],
    "reused_tokens": 0,
    "distinct_prefixes": 1,
    "think_time": 0.0,
    "adapters": None,
}


def _constraints(args: argparse.Namespace, batch: bool) -> dict[str, object]:
    """What the flags say besides the workload: where and what may serve it, and how the answer is shown."""
    return {
        "platforms": tuple(args.platform or ()),
        "region": args.region,
        "provisioning": tuple(args.provisioning or (PROVISIONING if batch else ("on-demand",))),
        "models": tuple(m.strip() for text in args.model or () for m in text.split(",") if m.strip()),
        "min_scores": parse_min_scores(list(args.min_score)),
        "one_ranking": bool(args.one_ranking),
        "variants": tuple(args.variant or ()),
        "budget_usd_per_month": args.budget,
        "active_hours_per_month": args.active_hours,
        "max_replicas": args.max_replicas,
        "kv_cache_dtype": args.kv_cache_dtype,
        "top": args.top,
        "draft_tokens": parse_draft_tokens(str(args.draft_tokens)),
        "peak_factor": args.peak_factor,
    }


def options_from(args: argparse.Namespace) -> AdviseOptions:
    """The flags (or the workload file and the constraint flags) as options; UsageError naming the flag."""
    if args.workload is not None:
        given = [name for name, unset in _WORKLOAD_FLAGS.items() if getattr(args, name, unset) != unset]
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"--workload FILE states the workload: give no {flags} with it")
        workload = load_workload(Path(args.workload))
        return workload_options(workload, **_constraints(args, workload.batch is not None))
    if args.users is None and args.rate is None and args.batch is None:
        raise UsageError("state the load: --users N, --rate R or --batch REQUESTS (or --workload FILE)")
    if (args.batch is None) != (args.within is None):
        raise UsageError("--batch REQUESTS and --within HOURS go together")
    if args.lengths is not None and (args.prompt_tokens is not None or args.output_tokens is not None):
        raise UsageError("--lengths replaces --prompt-tokens and --output-tokens: give one or the other")
    if args.lengths is None and (args.prompt_tokens is None or args.output_tokens is None):
        raise UsageError("state the request size: --prompt-tokens and --output-tokens, or --lengths")
    try:
        values = {
            "users": args.users,
            "rate": args.rate,
            "slo": parse_slo(list(args.slo)),
            "batch_requests": args.batch,
            "within_hours": parse_hours(args.within) if args.within is not None else None,
            "runs_per_month": args.runs_per_month,
            "reused_tokens": args.reused_tokens,
            "distinct_prefixes": args.distinct_prefixes,
            "think_time_s": args.think_time,
            "adapters": adapter_workload(args.adapters, args.adapter_rank, args.adapter_share),
            **_constraints(args, args.batch is not None),
        }
        if args.lengths is not None:
            return AdviseOptions.with_lengths(parse_lengths(str(args.lengths)), **values)
        return AdviseOptions(prompt_tokens=args.prompt_tokens, output_tokens=args.output_tokens, **values)
    except pydantic.ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in error.errors())
        raise UsageError(problems) from None


def _advise(args: argparse.Namespace) -> int:
    options = options_from(args)
    if args.write is not None:
        # Refused before the advice is computed: nothing about a row changes these.
        problems = request_problems(
            project_root(), str(args.write), force=args.force, revision=args.revision, drafter=args.drafter_revision
        )
        if problems:
            raise UsageError("; ".join(problems) + f"; {NOTHING_WRITTEN}")
    capacity = [(Path(path), load_capacity(Path(path))) for path in args.capacity]
    report = with_capacity(run_advise(options), capacity)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        sys.stdout.write(render(report))
    if args.write is not None:
        _write(args, report)
    return report.exit_code


def command_line(args: argparse.Namespace) -> str:
    """The advise command as the user gave it (every flag that differs from its default), for the written stack's
    header: the stack says what answer it carries and how to ask again."""
    parser: argparse.ArgumentParser = args.advise_parser
    words = ["gemma-verify", "advise"]
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def _write(args: argparse.Namespace, report: AdviseReport) -> None:
    """``--write NAME``: the picked row as a stack file, or a line saying why nothing was written."""
    name = str(args.write)
    if not report.rows:
        print(f"--write {name}: {NOTHING_WRITTEN}: no deployment meets the SLO at this load", file=sys.stderr)
        return
    chosen = [row for row in report.rows if row.rank == args.pick]
    if not chosen:
        raise UsageError(f"--pick {args.pick}: the answer has ranks 1 to {len(report.rows)}; {NOTHING_WRITTEN}")
    path = write_stack(
        project_root(),
        name,
        chosen[0],
        revision=args.revision,
        drafter_revision=args.drafter_revision,
        force=args.force,
        command=command_line(args),
    )
    print(written_message(path, name), file=sys.stderr)


def register_calibrate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="turn a bench results file's trusted cells into speed records advise prefers over its estimates, or "
        "refit the latency model's factors to them (--refit)",
        description="Write each trusted, physically possible cell of a `gemma-verify bench` results file as a speed "
        "record (calibration/speed/), keyed by the stack's model, variant, shape, vLLM version and speed-relevant "
        "serving arguments, with the file's SHA-256. Cells that are untrusted or over their physical ceiling are "
        "refused, with the reason. With --refit (no results file): fit the latency model's factors to the write-up "
        "figures (priors) and every speed record of the project, and write them with their provenance to "
        "serving/data/latency-efficiency.json, which every estimate reads. Exit codes: 0 written, 1 every measured "
        "cell refused, 2 usage errors.",
    )
    parser.add_argument("results", type=Path, nargs="?", help="a results file (JSON lines) from gemma-verify bench")
    parser.add_argument("--stack", metavar="NAME", help="the stack that served it (Pulumi.<NAME>.yaml)")
    parser.add_argument(
        "--refit",
        action="store_true",
        help="refit the latency model's factors to the write-up figures and the project's speed records",
    )
    parser.add_argument(
        "--no-leave-one-out",
        action="store_true",
        help="with --refit: skip the leave-one-write-up-out check (minutes) and keep its stored errors",
    )
    parser.set_defaults(handler=_calibrate)


def _calibrate(args: argparse.Namespace) -> int:
    if args.refit:
        if args.results is not None or args.stack is not None:
            raise UsageError("--refit reads the project's speed records: give no results file or --stack")
        refit = run_refit(with_leave_one_out=not args.no_leave_one_out)
        print(render_refit(refit), end="")
        return 0
    if args.results is None or args.stack is None:
        raise UsageError("calibrate needs a results file and --stack NAME (or --refit)")
    if not Path(args.results).is_file():
        raise UsageError(f"{args.results}: no such results file")
    answer = calibrate(Path(args.results), str(args.stack))
    for line in answer.refused:
        print(f"refused {line}", file=sys.stderr)
    for path in answer.written:
        print(f"wrote {path}")
    print(f"{len(answer.records)} record(s), {len(answer.refused)} cell(s) refused")
    return 1 if answer.refused and not answer.records else 0
