"""`verify bench --on-cloud-run`, `verify bench task` (what the job's tasks run) and `verify bench collect`,
as functions: ``run_on_cloud_run``, ``run_bench_task`` and ``collect_run``, each returning a report.

Why three entry points: the user starts an execution of the stack's load-generator job with the sweep
as its arguments (``--on-cloud-run``, which waits for it, copies the tasks' files from the results
bucket and merges them); each task of the job runs ``bench task``; ``bench collect DIR`` merges a run's
files again at any time (e.g. after copying them by hand). Every external step is a command the user
could type (``gcloud run jobs execute``, ``gcloud storage cp``), run through an injectable runner.
Flags and rendering live in verify/bench/cli.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pydantic
from rich.console import Console

from serving.outputs import BenchJobOutputs
from verify import UsageError, discovery
from verify.auth import GoogleIdTokenAuth
from verify.bench.cloud import DEFAULT_BARRIER_TIMEOUT_S, FileBarrier, TaskSlot, merged_records, run_task, task_file
from verify.bench.judgement import AcceleratorFacts, accelerator_facts
from verify.bench.load_generator import TransportKind, raise_fd_limit
from verify.bench.options import BenchOptions, Gate, ServingFacts, Workload
from verify.bench.prompts import choose_counter
from verify.bench.report import write_reports
from verify.bench.results import CellRecord, append_record, read_checked
from verify.bench.share_lines import CollectError, read_shares
from verify.bench.sweep import Endpoint, plan_for
from verify.bench.trust import gate_failures
from verify.bench.workers import ClientSpec, auth_headers, available_cpus, worker_pool
from verify.client import make_client
from verify.endpoint import TimeoutOptions, speculative_tokens
from verify.pulumi_gateway import AutomationGateway, StackOutputsReader, missing_cli_message, pulumi_project_dir
from verify.reach import http_timeout

EXIT_OK = 0
EXIT_FAILED = 1
Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]
# gcloud splits list flags on commas, and --concurrency 1,8,32 has commas: name another delimiter
# (`gcloud topic escaping`).
ARGS_DELIMITER = "|"
# What `--on-cloud-run` tells a user without the Pulumi CLI (the job is found through the stack's outputs).
WITHOUT_PULUMI_ON_CLOUD_RUN = "or benchmark from here without --on-cloud-run"


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), cwd=pulumi_project_dir(), capture_output=True, text=True, check=False)


def _gateway() -> StackOutputsReader:
    """Where `--on-cloud-run` finds the job: the stack's outputs (tests replace this with a fake)."""
    return AutomationGateway(missing_cli=missing_cli_message("--stack needs", WITHOUT_PULUMI_ON_CLOUD_RUN))


@dataclass(frozen=True, slots=True)
class CollectOptions:
    """Where the merged cells go, the gates they must meet and what served them."""

    output: Path
    gate: Gate = field(default_factory=Gate)
    facts: ServingFacts = field(default_factory=ServingFacts)


class CollectReport(pydantic.BaseModel):
    """A load-generator run merged into ``output`` (+ ``reports``), and the cells' gate failures (exit 1)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    run_id: str
    directory: Path
    output: Path
    records: tuple[CellRecord, ...]
    reports: tuple[Path, ...]
    copies_dropped: int = 0
    failures: tuple[str, ...] = ()

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.failures else EXIT_OK


# --- --on-cloud-run ---------------------------------------------------------------------------------


def task_arguments(
    workload: Workload, timeouts: TimeoutOptions, run_id: str, accelerator: str | None = None
) -> list[str]:
    """The sweep as arguments of ``python -m verify bench task`` (the job's command); ``accelerator`` (the
    stack's) is recorded in the task files, so a later ``bench collect`` checks the physical ceiling."""
    task = [
        "--run-id",
        run_id,
        "--concurrency",
        ",".join(map(str, workload.concurrency)),
        "--context",
        ",".join(map(str, workload.context)),
        "--max-tokens",
        str(workload.max_tokens),
        "--api",
        workload.api.value,
        "--timeout",
        f"{timeouts.read_s:g}",
    ]
    if workload.requests is not None:
        task += ["--requests", str(workload.requests)]
    if workload.warmup is not None:
        task += ["--warmup", str(workload.warmup)]
    if timeouts.deadline_s is not None:
        task += ["--deadline", f"{timeouts.deadline_s:g}"]
    if not workload.ignore_eos:
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


def run_on_cloud_run(
    stack: str, options: BenchOptions, console: Console, *, run: Runner | None = None
) -> CollectReport:
    """Start the stack's load-generator job with this sweep, wait, fetch the tasks' files, merge them."""
    run = run or _run
    reading = _gateway().outputs(stack)
    job = reading.bench_job()
    given = options.facts.accelerator
    accelerator = given or reading.outputs.accelerator
    run_id = "run-" + datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    execute = execute_command(job, task_arguments(options.workload, options.timeouts, run_id, accelerator))
    console.print(f"starting {job.tasks or '?'} load-generator tasks: {shlex.join(execute)}")
    executed = run(execute)
    if executed.returncode != 0:
        console.print(
            f"[yellow]warning[/] the execution failed ({executed.stderr.strip()[-300:]}); merging what it wrote"
        )
    output = options.output
    tasks_dir = output.with_name(output.stem + "-tasks")
    copied = run(copy_command(job, run_id, tasks_dir))
    if copied.returncode != 0:
        raise UsageError(f"copying the tasks' files failed: {copied.stderr.strip()[-300:]}")
    billing = reading.outputs.billing if not given else None
    facts = options.facts
    if facts.speculative_tokens is None:  # the job's tasks read no /metrics: the stack says what ran
        facts = dataclasses.replace(facts, speculative_tokens=speculative_tokens(reading.outputs.vllm_args))
    collect = CollectOptions(output=output, gate=options.gate, facts=facts)
    return merge_run(tasks_dir, collect, billing=billing)


# --- collect ----------------------------------------------------------------------------------------


def collect_run(directory: Path, options: CollectOptions) -> CollectReport:
    """``bench collect DIR``: merge a run's task files copied from the bucket."""
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory (copy the run with `gcloud storage cp -r gs://...`)")
    return merge_run(directory, options)


def _facts(facts: ServingFacts, recorded: str | None, billing: object) -> AcceleratorFacts:
    """What served the run: the given accelerator or the one the tasks recorded (the stack's), priced by the
    stack's billing output when there is one."""
    try:
        return accelerator_facts(
            facts.accelerator or recorded,
            count=facts.accelerator_count,
            price_override=facts.price_per_hour,
            billing=billing,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def merge_run(directory: Path, options: CollectOptions, *, billing: object = None) -> CollectReport:
    """Merge a run's task files into ``options.output`` (+ CSV, Markdown, PNG); SLO gates as `verify bench`."""
    output = options.output
    if read_checked(output).records:
        raise UsageError(f"{output} already holds cells; choose another --output")
    try:
        run = read_shares(directory)
        recorded = run.lines[0].line.endpoint.accelerator
        facts = _facts(options.facts, recorded, billing)
        records = merged_records(
            run,
            accelerator=facts,
            model_params=options.facts.model_params,
            speculative_tokens=options.facts.speculative_tokens,
        )
    except CollectError as exc:
        raise UsageError(str(exc)) from None
    for record in records:
        append_record(output, record)
    reports = write_reports(records, output.with_suffix(""))
    failures = gate_failures(list(options.gate.slos), records, allow_untrusted=options.gate.allow_untrusted)
    return CollectReport(
        run_id=run.run_id,
        directory=directory,
        output=output,
        records=tuple(records),
        reports=tuple(reports),
        copies_dropped=run.copies_dropped,
        failures=tuple(failures),
    )


# --- task -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """One task of the job; ``url``, ``model``, ``results`` and ``workers`` default to the job's environment
    (BENCH_URL, BENCH_MODEL, BENCH_RESULTS, BENCH_WORKERS)."""

    run_id: str
    workload: Workload = field(default_factory=Workload)
    timeouts: TimeoutOptions = field(default_factory=TimeoutOptions)
    url: str | None = None
    model: str | None = None
    results: str | None = None
    accelerator: str | None = None
    workers: int | None = None
    barrier_timeout_s: float = DEFAULT_BARRIER_TIMEOUT_S


class TaskReport(pydantic.BaseModel):
    """This task's share of every cell, written to ``output``."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    index: int
    count: int
    cells: int
    output: Path


def run_bench_task(options: TaskOptions, env: Mapping[str, str]) -> TaskReport:
    """One task of the job: its share of every cell, written to <results>/<run id>/task-<index>.jsonl."""
    url = options.url or env.get("BENCH_URL")
    model = options.model or env.get("BENCH_MODEL")
    results = options.results or env.get("BENCH_RESULTS")
    if not url or not model or not results:
        raise UsageError("bench task needs --url, --model and --results (or BENCH_URL, BENCH_MODEL, BENCH_RESULTS)")
    try:
        slot = TaskSlot.from_env(env)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    workers = options.workers or int(env.get("BENCH_WORKERS") or available_cpus())
    raise_fd_limit(max(options.workload.concurrency))
    output = task_file(Path(results), options.run_id, slot.index)
    try:
        accelerator_facts(options.accelerator)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cells = asyncio.run(_task(options, url=url, model=model, slot=slot, workers=workers, output=output))
    return TaskReport(index=slot.index, count=slot.count, cells=cells, output=output)


async def _task(options: TaskOptions, *, url: str, model: str, slot: TaskSlot, workers: int, output: Path) -> int:
    # The job runs as an identity with run.invoker on the service: an ID token from the metadata server.
    auth = GoogleIdTokenAuth(url) if url.startswith("https://") else None
    timeouts = options.timeouts
    async with make_client(url, auth, timeout=http_timeout(timeouts)) as client:
        try:
            models = await discovery.served_models(client)
        except discovery.AnswerError as exc:
            raise UsageError(f"{url} cannot be benchmarked: {exc}") from None
        card = discovery.find_card(models, model)
        names = frozenset({model}) if card is None else discovery.answer_names(models, card)
        plan = plan_for(options.workload, model=model, timeouts=timeouts, answer_names=names)
        endpoint = Endpoint(
            base_url=url,
            platform="cloud-run",
            max_model_len=None if card is None else card.max_model_len,
            transport=TransportKind.AIOHTTP.value,
            accelerator=AcceleratorFacts(options.accelerator, None, None),
        )
        counter = await choose_counter(client, model, plan.api)
        spec = ClientSpec(
            url, TransportKind.AIOHTTP, timeouts.connect_s, timeouts.read_s, max(options.workload.concurrency)
        )
        async with worker_pool(workers, spec) as pool:
            return await run_task(
                client,
                plan,
                endpoint,
                slot=slot,
                run_id=options.run_id,
                output=output,
                counter=counter,
                barrier=FileBarrier(output.parent, timeout_s=options.barrier_timeout_s),
                pool=pool,
                headers=lambda: auth_headers(client),
            )
