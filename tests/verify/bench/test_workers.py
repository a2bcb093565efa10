"""Worker processes: each runs its share of the users, warm-ups end before any measured request starts,
and every raw sample reaches the parent."""

from __future__ import annotations

import httpx
import pytest

from remote.tls import default_tls
from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig
from verify.auth import BearerApiKeyAuth
from verify.bench.load_generator import TransportKind
from verify.bench.workers import ClientSpec, WorkerPool, auth_headers, default_workers, measure_phase, worker_pool
from verify.streaming import Api, StreamRequest, StreamResult


def request(prompt: str) -> StreamRequest:
    return StreamRequest(model="tiny-gemma", prompt=prompt, max_tokens=5, api=Api.CHAT)


def prompts_seen(server: FakeVllm) -> list[str]:
    return [
        str(call.body["messages"][0]["content"])
        for call in server.requests
        if call.path == CHAT_PATH and isinstance(call.body, dict)
    ]


async def test_workers_measure_their_shares_and_send_every_sample() -> None:
    """Guards against a multi-process cell losing samples, counting warm-ups as measured, or starting one
    worker's measured phase while another still warms up (its load would be missing from the window)."""
    config = FakeVllmConfig(ttft_s=0.01, itl_s=0.002, api_key="k")
    warmups = [request(f"warm {index}") for index in range(4)]
    measured = [request(f"measured {index}") for index in range(24)]
    progress: list[StreamResult] = []
    async with FakeVllm(config) as server:
        spec = ClientSpec(server.url, TransportKind.AIOHTTP, 5.0, 5.0, max_users=6)
        async with WorkerPool(2, spec) as pool:
            shares = await pool.run_phase(
                warmups,
                measured,
                6,
                headers={"Authorization": "Bearer k"},
                timeouts=httpx.Timeout(5.0),
                on_result=progress.append,
            )
        seen = prompts_seen(server)
    assert [share.users for share in shares] == [3, 3]
    assert sorted(len(share.samples) for share in shares) == [12, 12]
    assert all(sample.result.ok for share in shares for sample in share.samples), "the credential reached the workers"
    assert len(progress) == 24
    # Every warm-up reached the server before the first measured request (the common start).
    last_warmup = max(index for index, prompt in enumerate(seen) if prompt.startswith("warm"))
    first_measured = min(index for index, prompt in enumerate(seen) if prompt.startswith("measured"))
    assert last_warmup < first_measured
    assert sorted(seen[first_measured:]) == sorted(f"measured {index}" for index in range(24))
    # Both measured phases began at the same instant, well within the start margin.
    assert abs(shares[0].started_at - shares[1].started_at) < 0.1


async def test_a_worker_that_cannot_reach_the_server_reports_failures_not_hangs() -> None:
    """Guards against a worker error (here: nothing listens) hanging the sweep instead of being measured.
    One worker process is enough to show it (the test above splits the load over two)."""
    async with FakeVllm() as server:
        url = server.url
    spec = ClientSpec(url, TransportKind.AIOHTTP, 1.0, 1.0, max_users=2)
    async with WorkerPool(1, spec) as pool:
        shares = await pool.run_phase([], [request("x")] * 4, 2, headers={}, timeouts=httpx.Timeout(1.0))
    failures = [sample.result.failure for share in shares for sample in share.samples]
    assert len(failures) == 4
    assert all(failure is not None and failure.kind.value == "connect_error" for failure in failures)


async def test_in_process_phase_watches_its_loop_and_stamps_send_times() -> None:
    """Guards against the one-process path measuring differently from a worker (same function, same fields)."""
    async with FakeVllm() as server, httpx.AsyncClient(base_url=server.url, verify=default_tls()) as client:
        share = await measure_phase(client, [request(str(index)) for index in range(6)], 3)
    assert len(share.samples) == 6
    assert share.users == 3
    assert share.started_at <= min(sample.sent_at for sample in share.samples)
    assert share.finished_at >= max(sample.sent_at for sample in share.samples)
    assert share.stalls.probes >= 0


@pytest.mark.parametrize(
    ("max_users", "cpus", "expected"),
    [(1, 16, 1), (32, 16, 1), (33, 16, 2), (256, 16, 8), (2048, 16, 16), (2048, 2, 2), (64, 1, 1)],
)
def test_default_workers_follow_the_users_within_the_cpus(max_users: int, cpus: int, expected: int) -> None:
    """Guards against one loop for 2048 users on a 16-core machine, or more processes than CPUs."""
    assert default_workers(max_users, cpus) == expected


async def test_one_worker_runs_in_process() -> None:
    """Guards against paying process start-up (and pickling) when one load generator is enough."""
    spec = ClientSpec("http://127.0.0.1:1", TransportKind.AIOHTTP, 1.0, 1.0, max_users=8)
    async with worker_pool(1, spec) as pool:
        assert pool is None


async def test_workers_get_the_parents_current_credential() -> None:
    """Guards against workers sending requests without the credential (401s counted as the model's failures)."""
    async with httpx.AsyncClient(
        base_url="http://127.0.0.1:1", auth=BearerApiKeyAuth("secret"), verify=default_tls()
    ) as client:
        assert await auth_headers(client) == {"authorization": "Bearer secret"}
    async with httpx.AsyncClient(base_url="http://127.0.0.1:1", verify=default_tls()) as client:
        assert await auth_headers(client) == {}
