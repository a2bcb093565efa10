"""No tool result carries a secret value, whatever the command under it printed."""

from __future__ import annotations

from collections.abc import Sequence

from gemma_mcp.context import ServerContext
from gemma_mcp.redact import REDACTED, Redactor
from gemma_mcp.runner import Completed
from tests.gemma_mcp.conftest import ROOT, FakePulumi, connect

API_KEY = "sk-live-0123456789abcdef"
HF_TOKEN = "hf_" + "a1B2c3D4e5" * 4


class LeakyRunner:
    """A child process that prints the credentials it was given (as a buggy CLI might)."""

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        document = f'{{"checks": [], "note": "key {API_KEY}", "token": "{HF_TOKEN}"}}'
        return Completed(exit_code=1, stdout=document, stderr=f"Authorization: Bearer {API_KEY}\n")


def test_redactor_scrubs_known_values_and_credential_shapes() -> None:
    """Values from the environment and well-known token shapes must both be replaced, inside any structure."""
    redactor = Redactor.from_environment({"VLLM_API_KEY": API_KEY, "HF_TOKEN": "short"})
    scrubbed = redactor.data({"a": [f"x {API_KEY} y", {"t": HF_TOKEN}], API_KEY: 3, "n": 1.5})
    assert scrubbed == {"a": [f"x {REDACTED} y", {"t": REDACTED}], REDACTED: 3, "n": 1.5}
    # Too short to be scrubbed by value: ordinary words must survive.
    assert redactor.text("a short answer") == "a short answer"


async def test_a_command_that_prints_a_secret_cannot_leak_it_through_a_tool() -> None:
    """Even if verify printed the API key, neither the text nor the structured result may contain it."""
    ctx = ServerContext(
        root=ROOT,
        run_module=LeakyRunner(),
        pulumi=FakePulumi(),
        redactor=Redactor.from_environment({"VLLM_API_KEY": API_KEY}),
    )
    async with connect(ctx) as client:
        result = await client.call_tool("health", {"url": "http://127.0.0.1:1", "wait_s": 1})
    everything = repr(result.structured_content) + "".join(getattr(block, "text", "") for block in result.content)
    assert API_KEY not in everything
    assert HF_TOKEN not in everything
    assert REDACTED in everything
