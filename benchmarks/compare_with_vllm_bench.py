"""Does `verify bench` agree with `vllm bench serve` on the same workload and server?

For each context x concurrency cell, runs the two back to back, ``--repeats`` times in ABBA order
(ours, vLLM's, vLLM's, ours, ...), and prints the median request throughput, mean TTFT and mean TPOT of
each with their relative difference. Alternating and taking medians is what makes the comparison
fair on a small shared machine, where the server's speed drifts with everyone else's load.

The workload is matched exactly. By default (``--vllm-prompts ours``) `vllm bench serve` sends the
very prompts a bench cell builds (as a ShareGPT-format dataset file, a fresh unique prefix per run, the chat template
applied by the server as for ours). ``--vllm-prompts random`` uses its random dataset instead, with
``--random-input-len`` chosen so the server counts the same prompt tokens as ours (for the chat API,
ours counts the chat template, so vLLM's input length is the context minus the template's tokens,
measured with ``/tokenize``). Either way: output length = ``--max-tokens`` with ``--ignore-eos`` and
``min_tokens`` (through ``--extra-body``, as ours sends it),
``--max-concurrency`` = users, ``--num-prompts`` = our measured requests, ``--num-warmups`` = our
warm-ups, and a fresh ``--seed`` per run (with its default seed the random dataset repeats the same
prompts on every invocation, which the server then serves from its prefix cache). The prefix-cache
hit rate of every run is read from ``/metrics`` and printed: vLLM's random dataset was measured at
17-28% (fresh seeds) and 89% (default seed) on tiny-gemma at 1024 tokens, ours at 0%.

Every run's measured phase is watched by a separate process (``python -m verify.bench.stall``) that
records how late this machine wakes a sleeping process. On a small machine that also hosts the server, wake-ups come
hundreds of milliseconds late in some runs and not in others, and a run with such a stall measures the
machine, not the tool: answers are noticed late and all at once, for `vllm bench serve` exactly as for
ours (measured: a third of the throughput, ten times the TTFT, in either tool). A run whose worst
stall exceeds ``--max-stall-ms`` is kept in the JSON but marked disturbed, and the run is repeated
(up to ``--max-attempts`` per tool and cell) until each tool has ``--repeats`` undisturbed runs; the
medians use undisturbed runs only, the same rule for both tools.

What removes the stalls is keeping the load generators off the server's CPUs: start the server
pinned (``taskset -c 0 start_vllm.sh``) and pass ``--client-cpus 1``. On our 2-core machine that took
the worst stall from hundreds of ms to under 12 ms in 116 of 118 runs of ours (docs/benchmarking.md);
without it, most runs of either tool were disturbed.

``--settle-s`` rests the machine before each run's first request: `vllm bench serve` spends its first
seconds importing and sampling at full speed on the client's CPU, and on a small virtual machine that
burst slowed the *server* through the measured phase that follows (measured: 20-25% fewer req/s at
128 x 32 than ours in two sessions; with a 10 s pause after its start-up, and the same rest before ours,
within 8%). So vLLM's run is paused (SIGSTOP/SIGCONT) just before its first request and ours waits as long.

At 256..2048 users (#40's "2048-user truth": unmeasured so far, docs/benchmarking.md), on a many-core
machine: serve benchmarks/scripted_server.py on some cores (its latencies are the truth), give the rest to
the clients with ``--client-cpus`` and ``--workers`` (one verify process per 32 users), and bound each
vLLM run with ``--run-timeout``; this never runs in tests or CI::

    taskset -c 0-3 python -m benchmarks.scripted_server --port 8200 --ttft-ms 200 --itl-ms 20 --workers 4 &
    python -m benchmarks.compare_with_vllm_bench --url http://127.0.0.1:8200 --model scripted \
        --tokenizer /path/to/tiny-model --vllm-command "python benchmarks/vllm_cpu_cli.py" \
        --concurrency 256,512,1024,2048 --context 128 --max-tokens 32 --repeats 3 \
        --client-cpus 4-15 --workers 12 --run-timeout 600

Usage (vLLM's CLI must be runnable as ``--vllm-command``)::

    python -m benchmarks.compare_with_vllm_bench --url http://127.0.0.1:8000 --model tiny-gemma \
        --tokenizer /path/to/tiny-model --vllm-command "vllm" --concurrency 1,8,32 --context 128,1024 \
        --max-tokens 32 --repeats 5 --client-cpus 1 --settle-s 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import httpx

from verify.argtypes import positive_int, positive_int_list, positive_number
from verify.bench.load_generator import TransportKind, raise_fd_limit
from verify.bench.prompts import PromptBook, calibrate, choose_counter
from verify.bench.sweep import Endpoint, QuietObserver, SweepPlan, run_cell
from verify.bench.workers import ClientSpec, worker_pool
from verify.client import aiohttp_transport, make_client
from verify.prom import parse_metrics
from verify.streaming import Api

TOLERANCE = 0.10
# A stall of L ms delays at most `users` answers by L, so it moves a cell's mean TTFT by at most
# users x L / requests: 30 ms moves 8 users x 128 requests by under 2 ms (8% of a 25 ms TTFT).
DEFAULT_MAX_STALL_MS = 30.0


@dataclass(frozen=True)
class Figures:
    """One run's headline numbers, and how badly the machine stalled while it ran."""

    request_throughput: float
    mean_ttft_ms: float
    mean_tpot_ms: float
    total_input_tokens: int
    completed: int
    failed: int
    prefix_cache_hit_rate: float | None = None
    machine_max_stall_ms: float | None = None

    def clean(self, max_stall_ms: float) -> bool:
        return self.machine_max_stall_ms is not None and self.machine_max_stall_ms <= max_stall_ms


class MachineWatch:
    """A stall watcher process (``python -m verify.bench.stall``) over one run's measured phase only.

    Started when the tool starts measuring (ours: the cell's measured phase begins; vLLM's: it prints
    "Starting main benchmark run"), so start-up and warm-ups of either tool do not count against it.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        if self._process is None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "verify.bench.stall"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )

    def stop(self) -> float | None:
        """The worst stall seen, in ms; None if the measured phase never began."""
        if self._process is None:
            return None
        report, _ = self._process.communicate(timeout=60)  # closing its stdin is what stops it
        self._process = None
        return float(json.loads(report)["max_ms"])


class _StartsWatch(QuietObserver):
    def __init__(self, watch: MachineWatch) -> None:
        self._watch = watch

    def cell_started(self, label: str, requests: int) -> None:
        self._watch.start()


async def _chat_template_tokens(client: httpx.AsyncClient, model: str) -> int:
    with_template = await client.post(
        "/tokenize", json={"model": model, "messages": [{"role": "user", "content": "x"}]}
    )
    without = await client.post("/tokenize", json={"model": model, "prompt": "x"})
    return int(with_template.json()["count"]) - int(without.json()["count"])


async def ours(
    url: str, plan: SweepPlan, context: int, concurrency: int, watch: MachineWatch, *, workers: int | None = None
) -> Figures:
    """One verify bench cell; ``workers`` > 1 spreads its users over that many load-generator processes, as
    ``verify bench --workers`` does (what 256..2048 users need: one event loop falls behind from ~64)."""
    raise_fd_limit(concurrency)
    spec = ClientSpec(url, TransportKind.AIOHTTP, 10.0, 600.0, concurrency)
    async with (
        make_client(url, None, transport=aiohttp_transport()) as client,
        worker_pool(workers or 1, spec) as pool,
    ):
        counter = await choose_counter(client, plan.model, plan.api)
        record = await run_cell(
            client,
            plan,
            Endpoint(base_url=url),
            context,
            concurrency,
            counter=counter,
            book=PromptBook(),
            observer=_StartsWatch(watch),
            pool=pool,
        )
    return Figures(
        record.request_throughput or 0.0,
        record.mean_ttft_ms or 0.0,
        record.mean_tpot_ms or 0.0,
        record.total_input_tokens,
        record.completed,
        record.failed,
    )


async def our_prompts(url: str, plan: SweepPlan, context: int, count: int) -> list[str]:
    """Prompts exactly as a bench cell builds them (calibrated length, a fresh unique prefix each)."""
    async with make_client(url, None) as client:
        counter = await choose_counter(client, plan.model, plan.api)
        book = PromptBook()
        shape = await calibrate(counter, context, nonce=book.nonce)
        return book.take(shape, count)


def _dataset_flags(
    options: Options, plan: SweepPlan, *, context: int, input_len: int, count: int, scratch: Path
) -> list[str]:
    if options.vllm_prompts == "random":
        return ["--dataset-name", "random", "--random-input-len", str(input_len)]
    prompts = asyncio.run(our_prompts(options.url, plan, context, count))
    # ShareGPT's file format, because its loader needs only json (the custom dataset's needs pandas);
    # vllm bench sends each prompt as the user message and the server applies the chat template.
    dataset = scratch / "prompts.json"
    conversations = [{"conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": "-"}]} for p in prompts]
    dataset.write_text(json.dumps(conversations))
    return ["--dataset-name", "sharegpt", "--dataset-path", str(dataset), "--disable-shuffle"]


def vllms(
    options: Options, plan: SweepPlan, context: int, input_len: int, concurrency: int, *, watch: MachineWatch
) -> Figures:
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "result.json"
        count = plan.requests_for(concurrency)
        dataset = _dataset_flags(
            options, plan, context=context, input_len=input_len, count=count, scratch=Path(scratch)
        )
        backend, endpoint = (
            ("openai-chat", "/v1/chat/completions") if plan.api is Api.CHAT else ("openai", "/v1/completions")
        )
        command = [
            *shlex.split(options.vllm_command),
            "bench",
            "serve",
            "--backend",
            backend,
            "--base-url",
            options.url,
            "--endpoint",
            endpoint,
            "--model",
            plan.model,
            "--tokenizer",
            options.tokenizer,
            *dataset,
            "--random-output-len" if options.vllm_prompts == "random" else "--sharegpt-output-len",
            str(plan.max_tokens),
            "--ignore-eos",
            # Ours also sends min_tokens (exact output length even where ignore_eos is not honoured); it
            # costs the server a logits processor per step (measured: 3-5% of E2EL at 1024 x 8), so
            # vLLM's runs send it too, or the two tools would not run the same workload.
            *(["--extra-body", json.dumps({"min_tokens": plan.max_tokens})] if plan.ignore_eos else []),
            "--max-concurrency",
            str(concurrency),
            "--num-prompts",
            str(count),
            "--num-warmups",
            str(plan.warmups_for(concurrency)),
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--seed",
            str(secrets.randbelow(2**31)),
            "--disable-tqdm",
            "--save-result",
            "--result-filename",
            str(result),
        ]
        output: list[str] = []
        # Unbuffered, or its progress lines reach us only when it exits (a pipe is block-buffered) and
        # the watch would start after the measured phase instead of with it.
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as bench:
            assert bench.stdout is not None
            for line in bench.stdout:
                output.append(line)
                if line.startswith("Starting initial single prompt test run") and options.settle_s > 0:
                    # Its start-up (imports, tokenizer, dataset) just ran the client CPU flat out; pause it
                    # before its first request so it starts from the same rested machine as ours.
                    bench.send_signal(signal.SIGSTOP)
                    time.sleep(options.settle_s)
                    bench.send_signal(signal.SIGCONT)
                if line.startswith("Starting main benchmark run"):
                    watch.start()
            returncode = bench.wait(timeout=options.run_timeout_s)
        if returncode != 0 or not result.exists():
            sys.exit(f"vllm bench serve failed ({returncode}):\n{''.join(output)[-4000:]}")
        data = json.loads(result.read_text())
    return Figures(
        data["request_throughput"],
        data["mean_ttft_ms"],
        data["mean_tpot_ms"],
        data["total_input_tokens"],
        data["completed"],
        data["failed"],
    )


def _cache_counters(url: str, model: str) -> tuple[float, float]:
    metrics = parse_metrics(httpx.get(f"{url}/metrics", timeout=30).text, model=model)
    return metrics.prefix_cache_hits or 0.0, metrics.prefix_cache_queries or 0.0


def _with_hit_rate(figures: Figures, before: tuple[float, float], after: tuple[float, float]) -> Figures:
    """The server's prefix-cache hit rate over one run (the server is shared: others' traffic counts too)."""
    queries = after[1] - before[1]
    rate = (after[0] - before[0]) / queries if queries else None
    return replace(figures, prefix_cache_hit_rate=rate)


def _diff(a: float, b: float) -> float:
    return (a - b) / b if b else float("inf")


@dataclass(frozen=True, slots=True)
class Options:
    """The flags of ``main``, parsed once (``--client-cpus`` as the CPU set it names)."""

    url: str
    model: str
    tokenizer: str
    vllm_command: str
    api: Api
    concurrency: tuple[int, ...]
    context: tuple[int, ...]
    max_tokens: int
    requests: int | None
    settle_s: float
    warmups: int | None
    repeats: int
    max_stall_ms: float
    max_attempts: int | None
    vllm_prompts: str
    client_cpus: frozenset[int] | None
    json: Path | None
    workers: int | None = None
    run_timeout_s: float = 900.0


def _parse_args() -> Options:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokenizer", required=True, help="tokenizer path or name for vllm bench serve")
    parser.add_argument("--vllm-command", default="vllm", help='how to run vLLM\'s CLI, e.g. "vllm"')
    parser.add_argument("--api", choices=[api.value for api in Api], default=Api.CHAT.value)
    parser.add_argument("--concurrency", type=positive_int_list("--concurrency"), default=(1, 8, 32))
    parser.add_argument("--context", type=positive_int_list("--context"), default=(128, 1024))
    parser.add_argument("--max-tokens", type=positive_int("--max-tokens"), default=32)
    parser.add_argument(
        "--requests", type=positive_int("--requests"), default=None, help="per cell (default: verify bench's)"
    )
    parser.add_argument(
        "--settle-s",
        type=float,
        default=0.0,
        help="rest before each run's first request (vLLM's run is paused after its start-up for this long)",
    )
    parser.add_argument(
        "--warmups",
        type=positive_int("--warmups", minimum=0),
        default=None,
        help="warm-up requests per run, both tools (default: verify bench's)",
    )
    parser.add_argument(
        "--repeats", type=positive_int("--repeats"), default=3, help="undisturbed runs wanted per tool and cell"
    )
    parser.add_argument(
        "--max-stall-ms",
        type=positive_number("--max-stall-ms"),
        default=DEFAULT_MAX_STALL_MS,
        help="a run during which the machine stalled a sleeping process longer than this is disturbed",
    )
    parser.add_argument(
        "--max-attempts",
        type=positive_int("--max-attempts"),
        default=None,
        help="runs per tool and cell at most (default: 3 x --repeats)",
    )
    parser.add_argument(
        "--vllm-prompts",
        choices=["ours", "random"],
        default="ours",
        help="ours: vllm bench serve sends verify bench's prompts (custom dataset), so both run the same "
        "workload; random: its random dataset (partly served from the prefix cache, see the hit rates)",
    )
    parser.add_argument(
        "--client-cpus",
        help="pin this script, both load generators and the watcher to these CPUs (e.g. 1, or 2-3): start the "
        "server on the others (taskset -c 0 ...) so neither tool competes with the server for CPU",
    )
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument(
        "--workers",
        type=positive_int("--workers"),
        default=None,
        help="verify bench's load-generator processes per cell (256..2048 users: one per 32 users, up to the CPUs "
        "of --client-cpus); default one process",
    )
    parser.add_argument(
        "--run-timeout",
        type=positive_number("--run-timeout", "seconds"),
        default=900.0,
        help="the longest one `vllm bench serve` run may take before it is stopped (default 900)",
    )
    parsed = parser.parse_args()
    return Options(
        url=parsed.url,
        model=parsed.model,
        tokenizer=parsed.tokenizer,
        vllm_command=parsed.vllm_command,
        api=Api(parsed.api),
        concurrency=parsed.concurrency,
        context=parsed.context,
        max_tokens=parsed.max_tokens,
        requests=parsed.requests,
        settle_s=parsed.settle_s,
        warmups=parsed.warmups,
        repeats=parsed.repeats,
        max_stall_ms=parsed.max_stall_ms,
        max_attempts=parsed.max_attempts,
        vllm_prompts=parsed.vllm_prompts,
        client_cpus=frozenset(parse_cpus(parsed.client_cpus)) if parsed.client_cpus else None,
        json=parsed.json,
        workers=parsed.workers,
        run_timeout_s=parsed.run_timeout,
    )


def parse_cpus(text: str) -> set[int]:
    """CPU numbers as taskset writes them: ``1``, ``0,2`` or ``2-3``."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    except ValueError:
        raise SystemExit(f"--client-cpus: {text!r} is not a CPU list like 1, 0,2 or 2-3") from None
    return cpus


@dataclass
class CellRuns:
    """Every run of one cell, per tool, in the order they ran."""

    context: int
    concurrency: int
    ours: list[Figures]
    vllm: list[Figures]

    def clean(self, tool: str, max_stall_ms: float) -> list[Figures]:
        return [f for f in getattr(self, tool) if f.clean(max_stall_ms)]


def run_cell_pair(options: Options, plan: SweepPlan, context: int, concurrency: int, template: int) -> CellRuns:
    """ABBA rounds until both tools have ``--repeats`` undisturbed runs or used up their attempts."""
    runs = CellRuns(context, concurrency, [], [])
    attempts = options.max_attempts if options.max_attempts is not None else 3 * options.repeats

    def wanted(order: tuple[str, str]) -> list[str]:
        return [
            tool
            for tool in order
            if len(runs.clean(tool, options.max_stall_ms)) < options.repeats and len(getattr(runs, tool)) < attempts
        ]

    round_number = 0
    # ABBA order: whichever runs first in a pair must not always be the same tool.
    while tools := wanted(("ours", "vllm") if round_number % 2 == 0 else ("vllm", "ours")):
        for tool in tools:
            before = _cache_counters(options.url, plan.model)
            watch = MachineWatch()
            try:
                if tool == "ours":
                    time.sleep(options.settle_s)  # as vLLM's run is paused after its start-up
                    figures = asyncio.run(ours(options.url, plan, context, concurrency, watch, workers=options.workers))
                else:
                    figures = vllms(options, plan, context, context - template, concurrency, watch=watch)
            finally:
                stall = watch.stop()
            figures = replace(figures, machine_max_stall_ms=stall)
            figures = _with_hit_rate(figures, before, _cache_counters(options.url, plan.model))
            getattr(runs, tool).append(figures)
            print(
                f"context {context} x {concurrency} users, {tool}: {figures.request_throughput:.1f} req/s, "
                f"TTFT {figures.mean_ttft_ms:.1f} ms, machine stall {figures.machine_max_stall_ms:.0f} ms",
                file=sys.stderr,
                flush=True,
            )
        round_number += 1
    return runs


def _table(cells: list[CellRuns], max_stall_ms: float) -> list[str]:
    lines = [
        (
            "| context | users | req/s ours / vLLM (diff) | mean TTFT ms ours / vLLM (diff) | "
            "mean TPOT ms ours / vLLM (diff) | undisturbed runs ours / vLLM | input tokens ours / vLLM | "
            "failed ours / vLLM | max prefix-cache hit rate ours / vLLM |"
        ),
        "| ---: | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in cells:
        undisturbed = all(cell.clean(tool, max_stall_ms) for tool in ("ours", "vllm"))
        # Compare like with like: undisturbed runs on both sides, or (flagged) every run on both sides.
        sides = {
            tool: cell.clean(tool, max_stall_ms) if undisturbed else getattr(cell, tool) for tool in ("ours", "vllm")
        }
        figures = []
        for name in ("request_throughput", "mean_ttft_ms", "mean_tpot_ms"):
            a = statistics.median(getattr(f, name) for f in sides["ours"])
            b = statistics.median(getattr(f, name) for f in sides["vllm"])
            mark = "" if abs(_diff(a, b)) <= TOLERANCE else " **>10%**"
            figures.append(f"{a:.4g} / {b:.4g} ({_diff(a, b) * 100:+.1f}%){mark}")
        counts = " / ".join(
            f"{len(cell.clean(tool, max_stall_ms))} of {len(getattr(cell, tool))}" for tool in ("ours", "vllm")
        )
        if not undisturbed:
            counts += " (a side had no undisturbed run: all runs compared)"
        inputs = f"{cell.ours[0].total_input_tokens} / {cell.vllm[0].total_input_tokens}"
        failed = f"{sum(f.failed for f in cell.ours)} / {sum(f.failed for f in cell.vllm)}"
        hits = " / ".join(f"{max((f.prefix_cache_hit_rate or 0.0) for f in sides[t]):.1%}" for t in ("ours", "vllm"))
        lines.append(
            f"| {cell.context} | {cell.concurrency} | "
            + " | ".join(figures)
            + f" | {counts} | {inputs} | {failed} | {hits} |"
        )
    return lines


def main() -> int:
    options = _parse_args()
    if options.client_cpus:
        # Children (vllm bench serve, the watcher) inherit the affinity.
        os.sched_setaffinity(0, options.client_cpus)
    plan = SweepPlan(
        model=options.model,
        contexts=options.context,
        concurrencies=options.concurrency,
        max_tokens=options.max_tokens,
        api=options.api,
        requests=options.requests,
        warmups=options.warmups,
    )

    async def overhead() -> int:
        async with make_client(options.url, None) as client:
            return await _chat_template_tokens(client, options.model) if plan.api is Api.CHAT else 0

    template = asyncio.run(overhead())
    cells: list[CellRuns] = []
    for context, concurrency, _rate in plan.cells():
        cells.append(run_cell_pair(options, plan, context, concurrency, template))
        if options.json:
            # Rewritten after every cell, so an interrupted comparison keeps what it measured.
            options.json.write_text(json.dumps([asdict(cell) for cell in cells], indent=2))
    print(f"undisturbed: the machine never stalled a sleeping process more than {options.max_stall_ms:g} ms")
    print("\n".join(_table(cells, options.max_stall_ms)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
