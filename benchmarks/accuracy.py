"""How close is `verify bench` to the truth? Measured against a server whose real timings it records.

Starts benchmarks/scripted_server.py (TTFT and inter-token gap set by arguments, every write scheduled
against its absolute deadline, the real write times of each stream's first and last token recorded),
then for each number of users runs ``python -m verify bench`` as a user would (a separate process,
one cell: context x users) and compares its mean TTFT, mean TPOT and req/s with what the server
really did for the same measured requests (the first ``--warmup`` arrivals are the warm-ups and are
left out; the rest are the measured phase; the true req/s is their count over the span from the first
arrival to the last write). Prints a Markdown table, then one JSON document (also to ``--json``).

Pin the server and the client to different CPUs (``--server-cpus 0 --client-cpus 1``) so that neither
measures the other's CPU use; ``--workers`` is passed to verify bench (default: its own choice).

Exit code 1 when a cell that verify bench marked *trusted* is off by more than ``--tolerance`` (the
failure that matters: a wrong number nobody was warned about); untrusted cells are shown, not failed.

Usage::

    python -m benchmarks.accuracy --users 1,16,64 --server-cpus 0 --client-cpus 1 --json accuracy.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.scripted_server import ServerRecord, summarize

DEFAULT_USERS = "1,16,64"
METRICS = (("mean_ttft_ms", "TTFT ms"), ("mean_tpot_ms", "TPOT ms"), ("request_throughput", "req/s"))


@dataclass(frozen=True, slots=True)
class Options:
    """The flags of ``main``, parsed once."""

    users: tuple[int, ...]
    ttft_ms: float
    itl_ms: float
    tokens: int
    context: int
    rounds: int
    min_requests: int
    warmup: int | None
    workers: int | None
    server_workers: int
    server_cpus: str | None
    client_cpus: str | None
    tolerance: float
    cell_timeout: float
    json: Path | None


def _taskset(cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus] if cpus else []


def start_server(options: Options) -> tuple[subprocess.Popen[str], str]:
    command = [
        *_taskset(options.server_cpus),
        sys.executable,
        "-m",
        "benchmarks.scripted_server",
        "--ttft-ms",
        str(options.ttft_ms),
        "--itl-ms",
        str(options.itl_ms),
        "--workers",
        str(options.server_workers),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        sys.exit(f"the scripted server did not start: {shlex.join(command)}")
    return process, str(json.loads(line)["url"])


def _http(url: str, *, post: bool = False) -> dict[str, object]:
    request = urllib.request.Request(url, method="POST" if post else "GET", data=b"" if post else None)  # noqa: S310 - a loopback URL the script builds itself
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - our own 127.0.0.1 server
        return dict(json.loads(answer.read()))


def truth(url: str, warmups: int) -> dict[str, float | int | None]:
    """What the server really did for the measured requests (arrivals after the warm-ups)."""
    raw = _http(f"{url}/stats?raw=1")["records"]
    assert isinstance(raw, list)
    records = [ServerRecord(*row) for row in raw]
    return summarize(records[warmups:])


def run_cell(options: Options, url: str, users: int, scratch: Path) -> dict[str, object]:
    requests = max(options.rounds * users, options.min_requests)
    warmups = min(users, 8) if options.warmup is None else options.warmup
    output = scratch / f"users-{users}.jsonl"
    command = [
        *_taskset(options.client_cpus),
        sys.executable,
        "-m",
        "verify",
        "bench",
        "--url",
        url,
        "--concurrency",
        str(users),
        "--context",
        str(options.context),
        "--max-tokens",
        str(options.tokens),
        "--requests",
        str(requests),
        "--warmup",
        str(warmups),
        "--output",
        str(output),
        "--no-progress",
    ]
    if options.workers:
        command += ["--workers", str(options.workers)]
    _http(f"{url}/stats/reset", post=True)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=options.cell_timeout)
    seconds = time.monotonic() - started
    if done.returncode != 0 or not output.exists():
        return {"users": users, "error": (done.stdout + done.stderr)[-2000:]}
    record = json.loads(output.read_text().splitlines()[-1])
    real = truth(url, warmups)
    row: dict[str, object] = {
        "users": users,
        "requests": requests,
        "workers": record.get("client_workers"),
        "trusted": record.get("trusted", True),
        "client_max_stall_ms": record.get("client_max_stall_ms"),
        "client_mean_lag_ms": record.get("client_mean_lag_ms"),
        "server_max_lateness_ms": real.get("max_first_lateness_ms"),
        "seconds": round(seconds, 1),
        "failed": record.get("failed"),
    }
    for key, _ in METRICS:
        measured, true = record.get(key), real.get(key)
        row[f"{key}_measured"] = measured
        row[f"{key}_true"] = true
        row[f"{key}_error_pct"] = (
            None
            if not isinstance(measured, int | float) or not isinstance(true, int | float) or true == 0
            else (measured - true) / true * 100.0
        )
    return row


def _num(value: object, digits: int = 4) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.{digits}g}"


def _pct(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:+.1f}%"


def table(rows: Sequence[dict[str, object]], tolerance: float) -> str:
    header = ["users", "workers", "trusted"]
    for _, label in METRICS:
        header += [f"{label} true", f"{label} measured", "error"]
    header += ["client worst stall ms", "client mean lag ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['users']} | failed: {str(row['error'])[-200:]!r} |")
            continue
        cells = [str(row["users"]), str(row["workers"]), "yes" if row["trusted"] else "**no**"]
        for key, _ in METRICS:
            error = row[f"{key}_error_pct"]
            shown = _pct(error)
            if isinstance(error, float) and abs(error) > tolerance:
                shown = f"**{shown}**"
            cells += [_num(row[f"{key}_true"]), _num(row[f"{key}_measured"]), shown]
        cells += [_num(row["client_max_stall_ms"], 3), _num(row["client_mean_lag_ms"], 3)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _unflagged_misses(rows: Sequence[dict[str, object]], tolerance: float) -> list[str]:
    misses = []
    for row in rows:
        if "error" in row or not row["trusted"]:
            continue
        for key, _ in METRICS:
            error = row[f"{key}_error_pct"]
            if isinstance(error, float) and abs(error) > tolerance:
                misses.append(f"{row['users']} users: {key} {error:+.1f}%")
    return misses


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default=DEFAULT_USERS, help=f"comma-separated (default {DEFAULT_USERS})")
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--tokens", type=int, default=32, help="output tokens per request (default 32)")
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=8, help="measured requests per user (default 8)")
    parser.add_argument("--min-requests", type=int, default=48)
    parser.add_argument("--warmup", type=int, help="warm-up requests per cell (default min(users, 8))")
    parser.add_argument("--workers", type=int, help="verify bench --workers (default: its own choice)")
    parser.add_argument("--server-workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--server-cpus", help="taskset CPU list for the server, e.g. 0")
    parser.add_argument("--client-cpus", help="taskset CPU list for verify bench, e.g. 1")
    parser.add_argument("--tolerance", type=float, default=5.0, help="percent (default 5)")
    parser.add_argument("--cell-timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the JSON document here")
    parsed = parser.parse_args(argv)
    options = Options(
        users=tuple(int(value) for value in parsed.users.split(",")),
        ttft_ms=parsed.ttft_ms,
        itl_ms=parsed.itl_ms,
        tokens=parsed.tokens,
        context=parsed.context,
        rounds=parsed.rounds,
        min_requests=parsed.min_requests,
        warmup=parsed.warmup,
        workers=parsed.workers,
        server_workers=parsed.server_workers,
        server_cpus=parsed.server_cpus,
        client_cpus=parsed.client_cpus,
        tolerance=parsed.tolerance,
        cell_timeout=parsed.cell_timeout,
        json=parsed.json,
    )
    server, url = start_server(options)
    rows: list[dict[str, object]] = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for count in options.users:
                row = run_cell(options, url, count, Path(scratch))
                rows.append(row)
                print(f"{count} users: {json.dumps(row)}", file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait(10)
    document = {
        "server": {"ttft_ms": options.ttft_ms, "itl_ms": options.itl_ms, "workers": options.server_workers},
        "client_cpus": options.client_cpus,
        "server_cpus": options.server_cpus,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "tolerance_pct": options.tolerance,
        "rows": rows,
        "worst_error_pct": max(
            (abs(float(e)) for r in rows for k, _ in METRICS if isinstance(e := r.get(f"{k}_error_pct"), float)),
            default=None,
        ),
    }
    print(table(rows, options.tolerance))
    print(json.dumps(document, indent=2))
    if options.json:
        options.json.write_text(json.dumps(document, indent=2) + "\n")
    misses = _unflagged_misses(rows, options.tolerance)
    for miss in misses:
        print(f"outside {options.tolerance:g}% on a trusted cell: {miss}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
