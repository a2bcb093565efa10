"""How much load can `verify bench`'s client generate, and how much latency does it add?

Against benchmarks/instant_server.py (a separate process answering every request with a fixed
32-chunk stream at once), runs the exact code path of a bench cell (``closed_loop`` of
``measure_stream``) at concurrency 1, 64, 256, 1024 and 2048, for each transport the CLI offers,
and reports the request rate sustained and the latency the client adds (the server adds ~nothing,
so TTFT and E2EL here are the client's own overhead plus the kernel's). With ``--vllm-command`` it
also runs `vllm bench serve` at concurrency 256 against the same server, the reference a trusted
load generator must match.

Prints a Markdown table, then one JSON document (also written to ``--json``). Bounded to a few
minutes: requests per point are ``max(concurrency, --min-requests)`` (default 2048).

Usage::

    python -m benchmarks.client_overhead [--vllm-command "vllm" --tokenizer PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from verify.bench.load_generator import TransportKind, make_transport, raise_fd_limit
from verify.bench.metrics import cell_metrics
from verify.bench.sweep import closed_loop
from verify.streaming import Api, StreamRequest

CONCURRENCIES = (1, 64, 256, 1024, 2048)
VLLM_CONCURRENCY = 256
SERVER_SCRIPT = Path(__file__).with_name("instant_server.py")


@dataclass(frozen=True, slots=True)
class Options:
    """The flags of ``main``, parsed once."""

    transports: tuple[TransportKind, ...]
    concurrencies: tuple[int, ...]
    min_requests: int
    vllm_command: str | None
    tokenizer: str | None
    json: Path | None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    process.stdout.readline()  # the "listening" line
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit("the instant server did not start")


async def measure(url: str, transport: TransportKind, concurrency: int, requests: int) -> dict[str, object]:
    request = StreamRequest(model="tiny-gemma", prompt="hello", max_tokens=32, api=Api.CHAT)
    timeouts = httpx.Timeout(60.0, connect=30.0, pool=30.0)
    async with httpx.AsyncClient(base_url=url, transport=make_transport(transport), timeout=timeouts) as client:
        # Open the connections first, as a bench cell's warm-up does, so the point measures streaming.
        await closed_loop(client, [request] * concurrency, concurrency, timeouts=timeouts)
        results, duration = await closed_loop(client, [request] * requests, concurrency, timeouts=timeouts)
    metrics = cell_metrics(results, duration)
    return {
        "client": f"verify bench ({transport.value})",
        "concurrency": concurrency,
        "requests": requests,
        "failed": metrics.failed,
        "errors": metrics.errors,
        "duration_s": round(duration, 3),
        "req_per_s": round(metrics.request_throughput, 1),
        "ttft_p50_ms": round(metrics.ttft.median, 2),
        "ttft_p99_ms": round(metrics.ttft.percentiles[99], 2),
        "e2el_p50_ms": round(metrics.e2el.median, 2),
        "e2el_p99_ms": round(metrics.e2el.percentiles[99], 2),
    }


def vllm_reference(vllm_command: str, tokenizer: str, url: str, *, min_requests: int) -> dict[str, object]:
    requests = max(8 * VLLM_CONCURRENCY, min_requests)
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "vllm.json"
        command = [
            *shlex.split(vllm_command),
            "bench",
            "serve",
            "--backend",
            "openai-chat",
            "--base-url",
            url,
            "--endpoint",
            "/v1/chat/completions",
            "--model",
            "tiny-gemma",
            "--tokenizer",
            tokenizer,
            "--dataset-name",
            "random",
            "--random-input-len",
            "16",
            "--random-output-len",
            "32",
            "--ignore-eos",
            "--max-concurrency",
            str(VLLM_CONCURRENCY),
            "--num-prompts",
            str(requests),
            "--percentile-metrics",
            "ttft,e2el",
            "--metric-percentiles",
            "50,99",
            "--disable-tqdm",
            "--save-result",
            "--result-filename",
            str(result),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0 or not result.exists():
            return {"client": "vllm bench serve", "error": (done.stdout + done.stderr)[-1500:]}
        data = json.loads(result.read_text())
    return {
        "client": "vllm bench serve",
        "concurrency": VLLM_CONCURRENCY,
        "requests": requests,
        "failed": data["failed"],
        "errors": {},
        "duration_s": round(data["duration"], 3),
        "req_per_s": round(data["request_throughput"], 1),
        "ttft_p50_ms": round(data["p50_ttft_ms"], 2),
        "ttft_p99_ms": round(data["p99_ttft_ms"], 2),
        "e2el_p50_ms": round(data["p50_e2el_ms"], 2),
        "e2el_p99_ms": round(data["p99_e2el_ms"], 2),
    }


def table(rows: list[dict[str, object]]) -> str:
    columns: tuple[str, ...] = ("client", "concurrency", "requests", "failed", "req_per_s")
    columns += ("ttft_p50_ms", "ttft_p99_ms", "e2el_p50_ms", "e2el_p99_ms")
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transports", default="aiohttp,httpx", help="comma-separated: aiohttp,httpx")
    parser.add_argument("--concurrency", default=",".join(map(str, CONCURRENCIES)))
    parser.add_argument("--min-requests", type=int, default=2048)
    parser.add_argument("--vllm-command", help='how to run vLLM\'s CLI, e.g. "vllm" (skipped when absent)')
    parser.add_argument("--tokenizer", help="tokenizer for vllm bench serve's random prompts")
    parser.add_argument("--json", type=Path, help="also write the JSON document here")
    parsed = parser.parse_args()
    options = Options(
        transports=tuple(TransportKind(name) for name in parsed.transports.split(",")),
        concurrencies=tuple(int(c) for c in parsed.concurrency.split(",")),
        min_requests=parsed.min_requests,
        vllm_command=parsed.vllm_command,
        tokenizer=parsed.tokenizer,
        json=parsed.json,
    )
    warning = raise_fd_limit(max(options.concurrencies) * 2)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port)
    rows: list[dict[str, object]] = []
    started = time.monotonic()
    try:
        for transport in options.transports:
            for concurrency in options.concurrencies:
                requests = max(concurrency, options.min_requests)
                row = asyncio.run(measure(url, transport, concurrency, requests))
                rows.append(row)
                print(f"{row['client']} c={concurrency}: {row['req_per_s']} req/s", file=sys.stderr, flush=True)
        if options.vllm_command:
            if not options.tokenizer:
                sys.exit("--vllm-command needs --tokenizer (vllm bench serve builds its prompts with it)")
            rows.append(vllm_reference(options.vllm_command, options.tokenizer, url, min_requests=options.min_requests))
    finally:
        server.terminate()
        server.wait(10)
    document = {
        "server": "benchmarks/instant_server.py (32 chunks)",
        "seconds": round(time.monotonic() - started),
        "rows": rows,
    }
    print(table(rows))
    print(json.dumps(document, indent=2))
    if options.json:
        options.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
