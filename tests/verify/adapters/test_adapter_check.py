"""`gemma-verify adapters check` and the promote gate: an adapter passes only when it answers as itself."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

import httpx

from verify.adapters.run import (
    AdapterCheckReport,
    AdapterListing,
    DeclaredAdapter,
    Probe,
    probe_adapter,
    read_listing,
)
from verify.promote.gates import EXIT_FAILED, EXIT_OK, GateName, GateResult
from verify.promote.machine import run_gates

BASE = "gemma-4-12b-it"


def _sse(model: str, text: str) -> bytes:
    chunks: list[dict[str, object]] = [
        {"model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"model": model, "choices": [{"index": 0, "delta": {"content": text}}]},
        {"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        {"model": model, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}},
    ]
    head: dict[str, object] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    lines = [f"data: {json.dumps(head | chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def _server(answers: Mapping[str, tuple[str, str] | int]) -> httpx.MockTransport:
    """A vLLM that answers each asked model with (answering model, text), or an error status."""

    def handle(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)["model"]
        answer = answers.get(asked, 404)
        if isinstance(answer, int):
            body = {"error": {"message": f"The model `{asked}` does not exist.", "code": answer}}
            return httpx.Response(answer, json=body)
        model, text = answer
        return httpx.Response(200, content=_sse(model, text), headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handle)


def _check(answers: Mapping[str, tuple[str, str] | int], adapter: DeclaredAdapter) -> AdapterCheckReport:
    async def run() -> AdapterCheckReport:
        async with httpx.AsyncClient(transport=_server(answers), base_url="http://vllm.test") as client:
            return await probe_adapter(client, adapter, base=BASE, max_tokens=16)

    return asyncio.run(run())


SUPPORT = DeclaredAdapter(name="support-bot", probes=(Probe(prompt="Which plan?", expect="Enterprise"),))


def test_adapter_answering_as_itself_passes() -> None:
    """The adapter answers under its name, unlike the base, with what its probe expects."""
    report = _check({"support-bot": ("support-bot", "The Enterprise plan."), BASE: (BASE, "Any plan.")}, SUPPORT)
    assert report.passed, report.problems
    assert report.exit_code == 0


def test_adapter_that_changes_nothing_fails() -> None:
    """An adapter with zero weights (or served as the base) answers exactly like the base: that is a failure."""
    adapter = DeclaredAdapter(name="support-bot")
    report = _check({"support-bot": ("support-bot", "Same."), BASE: (BASE, "Same.")}, adapter)
    assert not report.passed
    assert "changes nothing" in report.problems[-1]


def test_missing_adapter_fails_naming_the_status() -> None:
    """An adapter the resolver could not find answers 404 at its first request; the check says so."""
    report = _check({BASE: (BASE, "Any plan.")}, SUPPORT)
    assert not report.passed
    assert "HTTP 404" in report.problems[0]


def test_answer_from_another_model_and_missing_expectation_fail() -> None:
    """A proxy or router that sends the request to the base must not pass as the adapter."""
    report = _check({"support-bot": (BASE, "Any plan, really."), BASE: (BASE, "Any plan.")}, SUPPORT)
    assert any("came from" in problem for problem in report.problems)
    report = _check({"support-bot": ("support-bot", "Basic."), BASE: (BASE, "Any plan.")}, SUPPORT)
    assert any("Enterprise" in problem for problem in report.problems)


def test_listing_reads_loaded_adapters_and_their_activity() -> None:
    """list shows what vLLM loaded (cards with a parent) and what runs now (vllm:lora_requests_info)."""
    models = {
        "object": "list",
        "data": [
            {"id": BASE, "root": "/mnt/models/x", "parent": None},
            {"id": "support-bot", "root": "/mnt/models/adapters/support-bot", "parent": BASE},
        ],
    }
    metrics = (
        "# TYPE vllm:lora_requests_info gauge\n"
        'vllm:lora_requests_info{max_lora="4",running_lora_adapters="support-bot",waiting_lora_adapters=""} 2.0\n'
        'vllm:lora_requests_info{max_lora="4",running_lora_adapters="",waiting_lora_adapters=""} 1.0\n'
    )

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json=models)
        return httpx.Response(200, text=metrics)

    async def run() -> AdapterListing:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://vllm.test") as client:
            return await read_listing(client, "http://vllm.test", ["support-bot", "sql-writer"])

    listing = asyncio.run(run())
    assert listing.base_models == [BASE]
    assert [a.name for a in listing.loaded] == ["support-bot"]
    assert listing.running == ["support-bot"]
    assert listing.gpu_slots == 4
    assert listing.not_loaded_yet == ["sql-writer"]


class _Gates:
    def __init__(self, adapters: GateResult) -> None:
        self._adapters = adapters
        self.benched = False

    def health(self, url: str, *, wait_s: float) -> GateResult:
        return GateResult(GateName.HEALTH, EXIT_OK)

    def metrics(self, url: str) -> GateResult:
        return GateResult(GateName.METRICS, EXIT_OK)

    def adapters(self, url: str) -> GateResult | None:
        return self._adapters

    def bench(self, url: str, *, label: str) -> GateResult:
        self.benched = True
        return GateResult(GateName.BENCH, EXIT_OK)


def test_promote_refuses_a_candidate_whose_adapter_fails() -> None:
    """A new image or base revision can break adapters while the base passes: promote must refuse it."""
    gates = _Gates(GateResult(GateName.ADAPTERS, EXIT_FAILED, "adapter support-bot: probe 1: HTTP 400"))
    why = run_gates(gates, "https://candidate", subject="the candidate", label="x", wait_s=1, say=lambda _l: None)
    assert why is not None
    assert "adapter gate" in why
    assert "support-bot" in why
    assert not gates.benched
