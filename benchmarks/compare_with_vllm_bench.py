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
measured with ``/tokenize``). Either way: output length = ``--max-tokens`` with ``--ignore-eos``,
``--max-concurrency`` = users, ``--num-prompts`` = our measured requests, ``--num-warmups`` = our
warm-ups, and a fresh ``--seed`` per run (with its default seed the random dataset repeats the same
prompts on every invocation, which the server then serves from its prefix cache). The prefix-cache
hit rate of every run is read from ``/metrics`` and printed: vLLM's random dataset was measured at
17-28% (fresh seeds) and 89% (default seed) on tiny-gemma at 1024 tokens, ours at 0%.

Usage (vLLM's CLI must be runnable as ``--vllm-command``)::

    python benchmarks/compare_with_vllm_bench.py --url http://127.0.0.1:8000 --model tiny-gemma \
        --tokenizer /path/to/tiny-model --vllm-command "vllm" --concurrency 1,8,32 --context 128,1024 \
        --max-tokens 32 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

from verify.bench.prompts import PromptBook, calibrate, choose_counter
from verify.bench.sweep import Endpoint, QuietObserver, SweepPlan, run_cell
from verify.client import aiohttp_transport, make_client
from verify.prom import parse_metrics
from verify.streaming import Api

TOLERANCE = 0.10


@dataclass(frozen=True)
class Figures:
    request_throughput: float
    mean_ttft_ms: float
    mean_tpot_ms: float
    total_input_tokens: int
    completed: int
    failed: int
    prefix_cache_hit_rate: float | None = None


async def _chat_template_tokens(client: httpx.AsyncClient, model: str) -> int:
    with_template = await client.post(
        "/tokenize", json={"model": model, "messages": [{"role": "user", "content": "x"}]}
    )
    without = await client.post("/tokenize", json={"model": model, "prompt": "x"})
    return int(with_template.json()["count"]) - int(without.json()["count"])


async def ours(url: str, plan: SweepPlan, context: int, concurrency: int) -> Figures:
    async with make_client(url, None, transport=aiohttp_transport()) as client:
        counter = await choose_counter(client, plan.model, plan.api)
        record = await run_cell(
            client,
            plan,
            Endpoint(base_url=url),
            context,
            concurrency,
            counter=counter,
            book=PromptBook(),
            observer=QuietObserver(),
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
    args: argparse.Namespace, plan: SweepPlan, *, context: int, input_len: int, count: int, scratch: Path
) -> list[str]:
    if args.vllm_prompts == "random":
        return ["--dataset-name", "random", "--random-input-len", str(input_len)]
    prompts = asyncio.run(our_prompts(args.url, plan, context, count))
    # ShareGPT's file format, because its loader needs only json (the custom dataset's needs pandas);
    # vllm bench sends each prompt as the user message and the server applies the chat template.
    dataset = scratch / "prompts.json"
    conversations = [{"conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": "-"}]} for p in prompts]
    dataset.write_text(json.dumps(conversations))
    return ["--dataset-name", "sharegpt", "--dataset-path", str(dataset), "--disable-shuffle"]


def vllms(args: argparse.Namespace, plan: SweepPlan, context: int, input_len: int, concurrency: int) -> Figures:
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "result.json"
        count = plan.requests_for(concurrency)
        dataset = _dataset_flags(args, plan, context=context, input_len=input_len, count=count, scratch=Path(scratch))
        backend, endpoint = (
            ("openai-chat", "/v1/chat/completions") if plan.api is Api.CHAT else ("openai", "/v1/completions")
        )
        command = [
            *shlex.split(args.vllm_command),
            "bench",
            "serve",
            "--backend",
            backend,
            "--base-url",
            args.url,
            "--endpoint",
            endpoint,
            "--model",
            plan.model,
            "--tokenizer",
            args.tokenizer,
            *dataset,
            "--random-output-len" if args.vllm_prompts == "random" else "--sharegpt-output-len",
            str(plan.max_tokens),
            "--ignore-eos",
            "--max-concurrency",
            str(concurrency),
            "--num-prompts",
            str(plan.requests_for(concurrency)),
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
        completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
        if completed.returncode != 0 or not result.exists():
            sys.exit(
                f"vllm bench serve failed ({completed.returncode}):\n"
                f"{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}"
            )
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
    return Figures(**{**vars(figures), "prefix_cache_hit_rate": rate})


def _diff(a: float, b: float) -> float:
    return (a - b) / b if b else float("inf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokenizer", required=True, help="tokenizer path or name for vllm bench serve")
    parser.add_argument("--vllm-command", default="vllm", help='how to run vLLM\'s CLI, e.g. "vllm"')
    parser.add_argument("--api", choices=[api.value for api in Api], default=Api.CHAT.value)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--context", default="128,1024")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--requests", type=int, default=None, help="per cell (default: verify bench's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--vllm-prompts",
        choices=["ours", "random"],
        default="ours",
        help="ours: vllm bench serve sends verify bench's prompts (custom dataset), so both run the same "
        "workload; random: its random dataset (partly served from the prefix cache, see the hit rates)",
    )
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args()
    plan = SweepPlan(
        model=args.model,
        contexts=tuple(int(x) for x in args.context.split(",")),
        concurrencies=tuple(int(x) for x in args.concurrency.split(",")),
        max_tokens=args.max_tokens,
        api=Api(args.api),
        requests=args.requests,
    )

    async def overhead() -> int:
        async with make_client(args.url, None) as client:
            return await _chat_template_tokens(client, args.model) if plan.api is Api.CHAT else 0

    template = asyncio.run(overhead())
    rows = []
    runs: list[dict[str, object]] = []
    for context, concurrency in plan.cells():
        mine: list[Figures] = []
        theirs: list[Figures] = []
        for repeat in range(args.repeats):
            # ABBA order: whichever runs first in a pair must not always be the same tool.
            for tool in ("ours", "vllm") if repeat % 2 == 0 else ("vllm", "ours"):
                before = _cache_counters(args.url, plan.model)
                if tool == "ours":
                    figures = asyncio.run(ours(args.url, plan, context, concurrency))
                else:
                    figures = vllms(args, plan, context, context - template, concurrency)
                figures = _with_hit_rate(figures, before, _cache_counters(args.url, plan.model))
                (mine if tool == "ours" else theirs).append(figures)
        runs.append(
            {
                "context": context,
                "concurrency": concurrency,
                "ours": [vars(f) for f in mine],
                "vllm": [vars(f) for f in theirs],
            }
        )
        medians = {
            name: (
                statistics.median(getattr(f, name) for f in mine),
                statistics.median(getattr(f, name) for f in theirs),
            )
            for name in ("request_throughput", "mean_ttft_ms", "mean_tpot_ms")
        }
        inputs = (mine[0].total_input_tokens, theirs[0].total_input_tokens)
        failed = (sum(f.failed for f in mine), sum(f.failed for f in theirs))
        hits = tuple(max((f.prefix_cache_hit_rate or 0.0) for f in side) for side in (mine, theirs))
        rows.append((context, concurrency, medians, inputs, failed, hits))
        print(f"done: context {context} x concurrency {concurrency}", file=sys.stderr, flush=True)
    header = (
        "| context | users | req/s ours / vLLM (diff) | mean TTFT ms ours / vLLM (diff) | "
        "mean TPOT ms ours / vLLM (diff) | input tokens ours / vLLM | failed ours / vLLM | "
        "max prefix-cache hit rate ours / vLLM |"
    )
    print(header)
    print("| ---: | ---: | --- | --- | --- | --- | --- | --- |")
    for context, concurrency, medians, inputs, failed, hits in rows:
        cells = []
        for name in ("request_throughput", "mean_ttft_ms", "mean_tpot_ms"):
            a, b = medians[name]
            mark = "" if abs(_diff(a, b)) <= TOLERANCE else " **>10%**"
            cells.append(f"{a:.4g} / {b:.4g} ({_diff(a, b) * 100:+.1f}%){mark}")
        print(
            f"| {context} | {concurrency} | "
            + " | ".join(cells)
            + f" | {inputs[0]} / {inputs[1]} | {failed[0]} / {failed[1]} | {hits[0]:.1%} / {hits[1]:.1%} |"
        )
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
