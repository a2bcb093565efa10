"""`verify bench --on-cloud-run`, `verify bench task` (what the job's tasks run) and `verify bench collect`.

Why three entry points: the user starts an execution of the stack's load-generator job with the sweep
as its arguments (``--on-cloud-run``, which waits for it, copies the tasks' files from the results
bucket and merges them); each task of the job runs ``bench task``; ``bench collect DIR`` merges a run's
files again at any time (e.g. after copying them by hand). Every external step is a command the user
could type (``gcloud run jobs execute``, ``gcloud storage cp``), run through an injectable runner.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from serving.outputs import BenchJobOutputs
from verify import UsageError, discovery
from verify.argtypes import positive_int, positive_number
from verify.auth import GoogleIdTokenAuth
from verify.bench.cloud import FileBarrier, TaskSlot, merged_records, run_task, task_file
from verify.bench.console import summary_table
from verify.bench.judgement import AcceleratorFacts, accelerator_facts
from verify.bench.load_generator import TransportKind, raise_fd_limit
from verify.bench.prompts import choose_counter
from verify.bench.report import write_reports
from verify.bench.results import CellRecord, append_record, read_checked
from verify.bench.share_lines import CollectError, read_shares
from verify.bench.sweep import Endpoint, plan_from_arguments
from verify.bench.trust import gate_failures
from verify.bench.workers import ClientSpec, auth_headers, available_cpus, worker_pool
from verify.client import default_timeout, make_client
from verify.pulumi_gateway import AutomationGateway, StackOutputsReader, missing_cli_message, pulumi_project_dir
from verify.target import add_timeout_arguments

EXIT_OK = 0
EXIT_FAILED = 1
Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]
# gcloud splits list flags on commas, and --concurrency 1,8,32 has commas: name another delimiter
# (`gcloud topic escaping`).
ARGS_DELIMITER = "|"
# What to change when the job's own tasks were CPU-bound (said once under the cells).
# What `--on-cloud-run` tells a user without the Pulumi CLI (the job is found through the stack's outputs).
WITHOUT_PULUMI_ON_CLOUD_RUN = "or benchmark from here without --on-cloud-run"
JOB_ADVICE = "give the load-generator job more tasks or cpuPerTask (the stack's bench block)"


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), cwd=pulumi_project_dir(), capture_output=True, text=True, check=False)


def _gateway() -> StackOutputsReader:
    """Where `--on-cloud-run` finds the job: the stack's outputs (tests replace this with a fake)."""
    return AutomationGateway(missing_cli=missing_cli_message("--stack needs", WITHOUT_PULUMI_ON_CLOUD_RUN))


# --- --on-cloud-run ---------------------------------------------------------------------------------


def task_arguments(args: argparse.Namespace, run_id: str, accelerator: str | None = None) -> list[str]:
    """The sweep as arguments of ``python -m verify bench task`` (the job's command); ``accelerator`` (the
    stack's) is recorded in the task files, so a later ``bench collect`` checks the physical ceiling."""
    task = [
        "--run-id",
        run_id,
        "--concurrency",
        ",".join(map(str, args.concurrency)),
        "--context",
        ",".join(map(str, args.context)),
        "--max-tokens",
        str(args.max_tokens),
        "--api",
        args.api,
        "--timeout",
        f"{args.timeout:g}",
    ]
    if args.requests is not None:
        task += ["--requests", str(args.requests)]
    if args.warmup is not None:
        task += ["--warmup", str(args.warmup)]
    if args.deadline is not None:
        task += ["--deadline", f"{args.deadline:g}"]
    if not args.ignore_eos:
        task.append("--no-ignore-eos")
    if accelerator:
        task += ["--accelerator", accelerator]
    return task


def execute_command(job: BenchJobOutputs, task: Sequence[str]) -> list[str]:
    """``gcloud run jobs execute`` for the stack's job with the sweep as the container's arguments."""
    command = ["gcloud", "run", "jobs", "execute", job.name, "--region", job.region]
    if job.project:
        command += ["--project", job.project]
    return [*command, "--wait", f"--args=^{ARGS_DELIMITER}^" + ARGS_DELIMITER.join(task)]


def copy_command(job: BenchJobOutputs, run_id: str, destination: Path) -> list[str]:
    source = f"gs://{job.results_bucket}/{job.results_prefix}/{run_id}"
    return ["gcloud", "storage", "cp", "-r", source, str(destination)]


def run_on_cloud_run(args: argparse.Namespace, output: Path, console: Console, *, run: Runner | None = None) -> int:
    """Start the stack's load-generator job with this sweep, wait, fetch the tasks' files, merge them."""
    if args.stack is None:
        raise UsageError("--on-cloud-run needs --stack (the job is part of the stack)")
    run = run or _run
    reading = _gateway().outputs(args.stack)
    job = reading.bench_job()
    accelerator = args.accelerator or reading.outputs.accelerator
    run_id = "run-" + datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    execute = execute_command(job, task_arguments(args, run_id, accelerator))
    console.print(f"starting {job.tasks or '?'} load-generator tasks: {shlex.join(execute)}")
    executed = run(execute)
    if executed.returncode != 0:
        console.print(
            f"[yellow]warning[/] the execution failed ({executed.stderr.strip()[-300:]}); merging what it wrote"
        )
    tasks_dir = output.with_name(output.stem + "-tasks")
    copied = run(copy_command(job, run_id, tasks_dir))
    if copied.returncode != 0:
        raise UsageError(f"copying the tasks' files failed: {copied.stderr.strip()[-300:]}")
    billing = reading.outputs.billing if not args.accelerator else None
    return collect_into(tasks_dir, output, args, console, billing=billing)


# --- collect ----------------------------------------------------------------------------------------


def _facts(args: argparse.Namespace, recorded: str | None, billing: object) -> AcceleratorFacts:
    """What served the run: ``--accelerator`` or the one the tasks recorded (the stack's), priced by the
    stack's billing output when there is one."""
    try:
        return accelerator_facts(
            args.accelerator or recorded,
            count=args.accelerator_count,
            price_override=args.price_per_hour,
            billing=billing,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def collect_into(
    directory: Path, output: Path, args: argparse.Namespace, console: Console, *, billing: object = None
) -> int:
    """Merge a run's task files into ``output`` (+ CSV, Markdown, PNG); SLO gates as `verify bench`."""
    if read_checked(output).records:
        raise UsageError(f"{output} already holds cells; choose another --output")
    try:
        run = read_shares(directory)
        recorded = run.lines[0].line.endpoint.accelerator
        facts = _facts(args, recorded, billing)
        records = merged_records(run, accelerator=facts, model_params=args.model_params)
    except CollectError as exc:
        raise UsageError(str(exc)) from None
    if run.copies_dropped:
        console.print(
            f"{run.copies_dropped} share lines were exact copies of others (a second copy of the run inside "
            f"{directory}?) and were counted once"
        )
    for record in records:
        append_record(output, record)
    reports = write_reports(records, output.with_suffix(""))
    Console(width=None if sys.stdout.isatty() else 160).print(summary_table(records, advice=JOB_ADVICE))
    console.print(
        f"merged run {run.run_id}: {len(records)} cells into {output}; reports: {', '.join(str(p) for p in reports)}"
    )
    return _gate(records, args, console)


def _gate(records: list[CellRecord], args: argparse.Namespace, console: Console) -> int:
    failures = gate_failures(args.slo, records, allow_untrusted=args.allow_untrusted)
    for line in failures:
        console.print(f"[red]failed[/] {line}")
    return EXIT_FAILED if failures else EXIT_OK


def run_collect_command(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    directory: Path = args.directory
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory (copy the run with `gcloud storage cp -r gs://...`)")
    output: Path = args.output if args.output is not None else directory.with_suffix(".jsonl")
    return collect_into(directory, output, args, console)


# --- task -------------------------------------------------------------------------------------------


def run_task_command(args: argparse.Namespace, env: dict[str, str] | None = None) -> int:
    """One task of the job: its share of every cell, written to <results>/<run id>/task-<index>.jsonl."""
    values = dict(os.environ) if env is None else env
    url = args.url or values.get("BENCH_URL")
    model = args.model or values.get("BENCH_MODEL")
    results = args.results or values.get("BENCH_RESULTS")
    if not url or not model or not results:
        raise UsageError("bench task needs --url, --model and --results (or BENCH_URL, BENCH_MODEL, BENCH_RESULTS)")
    try:
        slot = TaskSlot.from_env(values)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    workers = args.workers or int(values.get("BENCH_WORKERS") or available_cpus())
    raise_fd_limit(max(args.concurrency))
    output = task_file(Path(results), args.run_id, slot.index)
    try:
        accelerator_facts(args.accelerator)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cells = asyncio.run(_task(args, url=url, model=model, slot=slot, workers=workers, output=output))
    print(f"task {slot.index} of {slot.count}: {cells} cells measured into {output}", flush=True)
    return EXIT_OK


async def _task(args: argparse.Namespace, *, url: str, model: str, slot: TaskSlot, workers: int, output: Path) -> int:
    # The job runs as an identity with run.invoker on the service: an ID token from the metadata server.
    auth = GoogleIdTokenAuth(url) if url.startswith("https://") else None
    timeout = default_timeout(connect_s=args.connect_timeout, read_s=args.timeout)
    async with make_client(url, auth, timeout=timeout) as client:
        plan = plan_from_arguments(args, model=model, timeouts=timeout)
        try:
            card = discovery.find_card(await discovery.served_models(client), model)
        except discovery.AnswerError as exc:
            raise UsageError(f"{url} cannot be benchmarked: {exc}") from None
        endpoint = Endpoint(
            base_url=url,
            platform="cloud-run",
            max_model_len=None if card is None else card.max_model_len,
            transport=TransportKind.AIOHTTP.value,
            accelerator=AcceleratorFacts(args.accelerator, None, None),
        )
        counter = await choose_counter(client, model, plan.api)
        spec = ClientSpec(url, TransportKind.AIOHTTP, args.connect_timeout, args.timeout, max(args.concurrency))
        async with worker_pool(workers, spec) as pool:
            return await run_task(
                client,
                plan,
                endpoint,
                slot=slot,
                run_id=args.run_id,
                output=output,
                counter=counter,
                barrier=FileBarrier(output.parent, timeout_s=args.barrier_timeout),
                pool=pool,
                headers=lambda: auth_headers(client),
            )


# --- parsers ----------------------------------------------------------------------------------------


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    add_workload: Callable[[argparse.ArgumentParser], object],
    add_gates: Callable[[argparse.ArgumentParser], object],
    add_facts: Callable[[argparse.ArgumentParser], object],
) -> None:
    """``bench task`` and ``bench collect`` (registered as ``bench-task``/``bench-collect``; verify.cli
    maps the two-word spelling onto them)."""
    task = subparsers.add_parser(
        "bench-task",
        prog="python -m verify bench task",
        help="(run by the load-generator job) this task's share of every cell",
    )
    add_workload(task)
    task.add_argument("--run-id", required=True, help="the execution's folder under --results")
    task.add_argument("--url", help="the service (default $BENCH_URL)")
    task.add_argument("--model", help="served model name (default $BENCH_MODEL)")
    task.add_argument("--results", help="folder on the results volume (default $BENCH_RESULTS)")
    task.add_argument("--accelerator", help="what serves the endpoint (the stack's), recorded for collect's ceiling")
    task.add_argument(
        "--workers", type=positive_int("--workers"), help="worker processes (default $BENCH_WORKERS, else the CPUs)"
    )
    add_timeout_arguments(task)
    task.add_argument(
        "--barrier-timeout",
        type=positive_number("--barrier-timeout", "seconds"),
        default=600.0,
        help="seconds to wait for the other tasks",
    )
    task.set_defaults(handler=run_task_command)
    collect = subparsers.add_parser(
        "bench-collect",
        prog="python -m verify bench collect",
        help="merge a load-generator run's task files into JSONL, CSV, Markdown and PNG",
    )
    collect.add_argument("directory", type=Path, metavar="DIR", help="the run's folder (copied from the bucket)")
    collect.add_argument("--output", type=Path, metavar="FILE.jsonl", help="default DIR.jsonl")
    add_gates(collect)
    add_facts(collect)
    collect.set_defaults(handler=run_collect_command)


def two_word_alias(argv: Sequence[str]) -> list[str]:
    """``bench collect ...`` / ``bench task ...`` -> ``bench-collect ...`` / ``bench-task ...``."""
    words = list(argv)
    if len(words) >= 2 and words[0] == "bench" and words[1] in {"collect", "task"}:
        return [f"bench-{words[1]}", *words[2:]]
    return words
