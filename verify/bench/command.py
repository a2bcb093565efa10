"""`verify bench` as a function: ``run_bench(target, options) -> BenchReport``.

What it does: reach the endpoint once (exit 2 now rather than a file full of failures), refuse an
``--output`` whose cells another workload measured (verify/bench/resume.py), measure the cells the file
does not hold yet (one JSON line each, appended as it finishes), snapshot the server's metrics around
the sweep, write the reports beside the file and judge the cells (coverage, ``--slo`` gates). What it
returns is data; verify/bench/cli.py renders it and turns it into an exit code, and ``verify promote``
keeps it as its bench gate's verdict. Progress (what is measured now, warnings) goes to ``console``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pydantic
from rich.console import Console

from verify import UsageError, discovery
from verify.auth import IdTokenFetcher, auth_advice
from verify.bench import resume, server_metrics
from verify.bench.bounds import check_workload
from verify.bench.console import ProgressObserver
from verify.bench.goodput import bounds_from
from verify.bench.judgement import AcceleratorFacts, accelerator_facts, params_from_model_name
from verify.bench.load_generator import make_transport, raise_fd_limit
from verify.bench.max_rate import MaxRate, search
from verify.bench.options import BenchOptions
from verify.bench.output_file import check_output
from verify.bench.prompts import PromptBook, TokenCounter, choose_counter
from verify.bench.report import write_reports
from verify.bench.results import CellKey, CellRecord, append_record, done_keys, read_checked
from verify.bench.slo import requests_needed, thin_gates
from verify.bench.sweep import (
    Endpoint,
    EndpointLostError,
    QuietObserver,
    SweepPlan,
    calibrated,
    plan_for,
    run_cell,
    run_sweep,
)
from verify.bench.trust import gate_failures
from verify.bench.workers import ClientSpec, worker_pool
from verify.endpoint import Target
from verify.reach import client_for
from verify.responses import body_excerpt
from verify.terminal import markup_safe

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2
EXIT_INTERRUPTED = 130


class BenchReport(pydantic.BaseModel):
    """What one run left in ``output`` and what it concluded.

    ``records`` are every cell the file holds after the run, ``new`` the ones this run measured (or
    skipped); ``reports`` the CSV, Markdown and PNG files written beside it (none when nothing new was
    measured). ``failures`` are the coverage and SLO problems (exit 1). ``lost`` says how the endpoint
    stopped answering mid-sweep and ``reports_error`` why the reports could not be written (each exit 2);
    ``interrupted`` is a Ctrl-C (exit 130). Finished cells stay in ``output`` in every case.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    output: Path
    planned: tuple[CellKey, ...] = ()
    records: tuple[CellRecord, ...] = ()
    new: tuple[CellRecord, ...] = ()
    reports: tuple[Path, ...] = ()
    failures: tuple[str, ...] = ()
    lost: str | None = None
    reports_error: str | None = None
    interrupted: bool = False
    # --find-max-rate: the search's answer and its rule (verify.bench.max_rate).
    max_rate: MaxRate | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """130 interrupted; 2 the endpoint stopped answering or the reports could not be written; 1 a cell
        asked for was not measured or missed a gate; 0 passed."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.lost is not None or self.reports_error is not None:
            return EXIT_UNUSABLE
        return EXIT_FAILED if self.failures else EXIT_OK

    @property
    def measured_any(self) -> bool:
        return any(record.measured for record in self.records)


@dataclass(frozen=True, slots=True)
class _Discovered:
    model: str
    vllm_version: str | None
    max_model_len: int | None
    # Every name the served model answers as (verify.discovery.answer_names).
    answer_names: frozenset[str]


def run_bench(
    target: Target,
    options: BenchOptions,
    *,
    console: Console,
    env: Mapping[str, str] | None = None,
    fetch_id_token: IdTokenFetcher | None = None,
) -> BenchReport:
    """Measure the cells of ``options.workload`` that ``options.output`` does not hold yet, and judge them.

    Raises ``UsageError`` (exit 2) for what must be fixed before measuring: an unusable output, a file
    holding another sweep's cells, an endpoint that cannot be reached, authorised or does not serve the
    model, a credential whose source is missing.
    """
    output = options.output
    check_output(output)
    check_workload(options.workload, options.max_rate)
    if options.workload.requests is not None:
        # An explicit count is the user's: refused when too few for the SLO (a default one is raised to it).
        thin = thin_gates(options.gate.slos, options.workload.requests, flag="--requests")
        if thin:
            raise UsageError(thin)
    existing = _existing_records(output, resume=options.resume, console=console)
    facts = _facts(target, options)
    if facts.price_basis:
        console.print(f"cost basis: {markup_safe(facts.price_basis)}")
    fd_warning = raise_fd_limit(max(options.workload.concurrency))
    if fd_warning:
        console.print(f"[yellow]warning[/] {fd_warning}")
    lost: str | None = None
    found_rate: list[MaxRate] = []
    try:
        planned = asyncio.run(
            _bench(
                target,
                options,
                existing=existing,
                facts=facts,
                console=console,
                env=env,
                fetch_id_token=fetch_id_token,
                found_rate=found_rate,
            )
        )
    except KeyboardInterrupt:
        records = read_checked(output).records
        return BenchReport(output=output, records=tuple(records), interrupted=True)
    except EndpointLostError as exc:
        planned = []
        kept = sum(record.measured for record in read_checked(output).records)
        lost = (
            f"the endpoint stopped answering: {exc.cell} was not measured: {exc.cause}; {kept} measured cells are "
            f"kept in {output}: once the server answers again, rerun with --output {output} --resume to measure "
            "the rest"
        )
    except OSError as exc:
        raise UsageError(
            f"--output {output}: writing a cell failed ({exc.strerror or exc}); finished cells are kept"
        ) from None
    records = read_checked(output).records
    new = [record for record in records if record.key not in done_keys(existing)]
    reports: list[Path] = []
    reports_error: str | None = None
    if new and any(record.measured for record in records):
        summary = _metrics_summary(output.with_suffix(".metrics.json"))
        try:
            reports = write_reports(records, output.with_suffix(""), metrics_summary=summary)
        except OSError as exc:
            reports_error = f"--output {output}: writing the reports failed ({exc.strerror or exc})"
    failures = [] if lost else coverage_problems(planned, records, allow_skipped=options.allow_skipped)
    max_rate = found_rate[0] if found_rate else None
    if max_rate is not None:
        # A search's failing probes are how it finds the edge: only no rate meeting the SLO fails the run.
        failures += [] if max_rate.best is not None else [max_rate.describe()]
    else:
        failures += (
            []
            if lost
            else gate_failures(list(options.gate.slos), records, allow_untrusted=options.gate.allow_untrusted)
        )
    return BenchReport(
        output=output,
        planned=tuple(planned),
        records=tuple(records),
        new=tuple(new),
        reports=tuple(reports),
        failures=tuple(failures),
        lost=lost,
        reports_error=reports_error,
        max_rate=max_rate,
    )


def _facts(target: Target, options: BenchOptions) -> AcceleratorFacts:
    """What serves the endpoint: the options' accelerator, else the stack's, priced by its billing output."""
    given = options.facts
    try:
        return accelerator_facts(
            given.accelerator or target.accelerator,
            count=given.accelerator_count,
            price_override=given.price_per_hour,
            billing=target.billing if not given.accelerator else None,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _existing_records(path: Path, *, resume: bool, console: Console) -> list[CellRecord]:
    loaded = read_checked(path)
    if loaded.unreadable_lines:
        console.print(
            f"[yellow]warning[/] {path}: lines {loaded.unreadable_lines} are not cell records (e.g. cut off by a "
            "kill) and are ignored"
        )
    if loaded.records and not resume:
        raise UsageError(
            f"--output {path} already holds {len(loaded.records)} cells; pass --resume to continue that sweep or "
            "choose another --output"
        )
    return loaded.records


def coverage_problems(planned: list[CellKey], records: list[CellRecord], *, allow_skipped: bool) -> list[str]:
    """A gate cannot pass on nothing: every cell asked for must be measured (skips only when allowed)."""
    latest = {record.key: record for record in records}
    missing = [latest.get(key) for key in planned if key not in latest or not latest[key].measured]
    if not missing:
        return []
    reasons = sorted({record.skip_reason or "skipped" for record in missing if record is not None})
    why = f" ({'; '.join(reasons)})" if reasons else ""
    if len(missing) == len(planned):
        return [f"no cell was measured{why}: nothing to judge, so the run fails"]
    if allow_skipped:
        return []
    return [f"{len(missing)} of {len(planned)} cells were not measured{why}; pass --allow-skipped to accept that"]


def _metrics_summary(path: Path) -> str | None:
    before, after = server_metrics.load_snapshots(path)
    return server_metrics.summary_markdown(before, after)


async def _discover(client: httpx.AsyncClient, target: Target, options: BenchOptions) -> _Discovered:
    """Reach the endpoint once before measuring: exit 2 now rather than fill a file with failures."""
    try:
        models = await discovery.served_models(client)
    except discovery.AnswerError as exc:
        raise UsageError(_unusable(exc, target, api_key_env=options.api_key_env)) from None
    card = discovery.find_card(models, target.model)
    if card is None:
        if target.model is None:
            raise UsageError(f"the server serves {models.names}; name the one to benchmark with --model")
        raise UsageError(f"the server does not serve {target.model!r}; it serves {models.names} (use --model)")
    try:
        version: str | None = await discovery.vllm_version(client)
    except discovery.AnswerError:
        version = None
    return _Discovered(
        card.id, version, card.max_model_len or target.max_model_len, discovery.answer_names(models, card)
    )


def _unusable(exc: discovery.AnswerError, target: Target, *, api_key_env: str | None) -> str:
    where = f"{target.base_url}{exc.path}"
    if exc.failure is not None:
        return f"{target.base_url} is unreachable: {exc.failure.kind.value} ({exc.failure.detail})"
    if exc.status in {httpx.codes.UNAUTHORIZED, httpx.codes.FORBIDDEN}:
        return f"{where} answered {exc.status}: {auth_advice(target, api_key_env=api_key_env)}"
    if exc.problem is discovery.AnswerProblem.STATUS:
        return (
            f"{where} answered {exc.status} ({body_excerpt(exc.body)}); is the server ready? "
            "run `gemma-verify health` first"
        )
    return f"{where} did not answer a model list: {body_excerpt(exc.body)}"


async def _bench(
    target: Target,
    options: BenchOptions,
    *,
    existing: list[CellRecord],
    facts: AcceleratorFacts,
    console: Console,
    env: Mapping[str, str] | None,
    fetch_id_token: IdTokenFetcher | None,
    found_rate: list[MaxRate] | None = None,
) -> list[CellKey]:
    """Measure the cells not in ``existing`` (or, with ``options.max_rate``, search the highest rate meeting
    the SLO, appending the answer to ``found_rate``); returns the keys of every cell this run asked for."""
    output, workload, timeouts = options.output, options.workload, options.timeouts
    async with client_for(
        target,
        api_key_env=options.api_key_env,
        timeouts=timeouts,
        transport=make_transport(options.transport),
        env=env,
        fetch_id_token=fetch_id_token,
    ) as client:
        found = await _discover(client, target, options)
        floor = requests_needed(options.gate.slos)
        plan = plan_for(
            workload,
            model=found.model,
            timeouts=timeouts,
            bounds=bounds_from(options.gate.slos),
            min_requests=floor,
            answer_names=found.answer_names,
        )
        endpoint = Endpoint(
            base_url=target.base_url,
            platform=target.platform,
            vllm_version=found.vllm_version,
            max_model_len=found.max_model_len,
            admission_limit=target.admission_limit,
            transport=options.transport.value,
            accelerator=facts,
            model_params=options.facts.model_params or params_from_model_name(found.model),
            speculative_tokens=(
                options.facts.speculative_tokens
                if options.facts.speculative_tokens is not None
                else target.speculative_tokens
            ),
        )
        found_differences = resume.differences(existing, plan, endpoint)
        if found_differences:
            raise UsageError(resume.refusal(output, found_differences))
        todo = [cell for cell in plan.cells() if plan.key(*cell) not in done_keys(existing)]
        # The served name and version are the server's text: shown escaped, never as markup.
        console.print(
            f"benchmarking {markup_safe(found.model)} at {markup_safe(target.base_url)} "
            f"(vLLM {markup_safe(found.vllm_version or 'unknown')}): "
            f"{len(todo)} cells to measure, {len(plan.cells()) - len(todo)} already in {markup_safe(output)}"
        )
        raised = workload.requests is None and any(
            dataclasses.replace(plan, min_requests=0).requests_for(users) < floor for users in plan.concurrencies
        )
        if raised:
            console.print(
                f"measuring at least {floor} requests per cell: the fewest the --slo percentiles can be judged on "
                "(--requests sets the count)"
            )
        if not todo:
            # Nothing to measure: every file stays as it is (no empty metrics window, no rewritten reports).
            return [plan.key(*cell) for cell in plan.cells()]
        counter = await choose_counter(client, found.model, plan.api)
        before = await server_metrics.snapshot(client, found.model)
        if options.max_rate is not None:
            result, keys = await _search_max_rate(client, plan, endpoint, options, counter=counter, console=console)
            if found_rate is not None:
                found_rate.append(result)
            after = await server_metrics.snapshot(client, found.model)
            server_metrics.write_snapshots(server_metrics.window_path(output), before, after)
            return keys
        spec = ClientSpec(
            target.base_url, options.transport, timeouts.connect_s, timeouts.read_s, max(workload.concurrency)
        )
        # Open-loop cells run in this process (verify.bench.open_loop): no worker processes to start for them.
        async with worker_pool(1 if workload.request_rates else options.workers, spec) as pool:
            if pool is not None:
                console.print(f"load generation: {pool.size} worker processes share each cell's users")
            if not options.progress:
                await run_sweep(
                    client, plan, endpoint, results_path=output, done=done_keys(existing), counter=counter, pool=pool
                )
            else:
                with ProgressObserver(console, cells=len(todo)) as observer:
                    await run_sweep(
                        client,
                        plan,
                        endpoint,
                        results_path=output,
                        done=done_keys(existing),
                        counter=counter,
                        book=PromptBook(),
                        observer=observer,
                        pool=pool,
                    )
        after = await server_metrics.snapshot(client, found.model)
        server_metrics.write_snapshots(server_metrics.window_path(output), before, after)
        return [plan.key(*cell) for cell in plan.cells()]


async def _search_max_rate(
    client: httpx.AsyncClient,
    plan: SweepPlan,
    endpoint: Endpoint,
    options: BenchOptions,
    *,
    counter: TokenCounter,
    console: Console,
) -> tuple[MaxRate, list[CellKey]]:
    """One open-loop cell per rate the search asks for (verify.bench.max_rate), each line appended as it ends."""
    rule = options.max_rate
    assert rule is not None
    context = plan.contexts[0]
    cap = plan.concurrencies[0]
    book = PromptBook()
    shape = await calibrated(counter, context, cap, nonce=book.nonce)
    keys: list[CellKey] = []
    console.print(
        f"searching the highest rate meeting {', '.join(s.describe() for s in options.gate.slos)}: {rule.describe()}"
    )

    async def measure(rate: float) -> CellRecord:
        record = await run_cell(
            client,
            plan,
            endpoint,
            context,
            cap,
            counter=counter,
            book=book,
            observer=QuietObserver(),
            shape=shape,
            rate=rate,
        )
        append_record(options.output, record)
        keys.append(record.key)
        verdict = "untrusted" if not record.trusted else "measured"
        console.print(
            f"probe {rate:g} req/s: {verdict}, p95 TTFT {record.p95_ttft_ms or 0:.0f} ms, {record.completed} ok"
        )
        return record

    result = await search(measure, list(options.gate.slos), rule, allow_untrusted=options.gate.allow_untrusted)
    return result, keys
