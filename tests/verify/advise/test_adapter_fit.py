"""`advise` with LoRA adapters: only deployments whose stack serves them are ranked, with their memory reserved.

The user-facing failure: a coding assistant with three team-trained adapters asked for the cheapest 12B
deployment and got a TPU stack, which then refuses adapters at `make preview`.
"""

from __future__ import annotations

import pytest

from serving.catalog import catalog_model
from serving.shapes import accelerator_facts
from tests.gemma_mcp.conftest import connect, text_of
from verify.advise.adapter_fit import CANNOT_SERVE, AdapterWorkload, reserved_bytes
from verify.advise.options import AdviseOptions
from verify.advise.report import AdviseReport
from verify.advise.run import run_advise
from verify.cli import main as verify_main

MODEL = "gemma-4-12b-it"
THREE_OF_RANK_16 = AdapterWorkload(count=3, rank=16)


def _ask(adapters: AdapterWorkload | None) -> AdviseReport:
    """The coding assistant's question, every platform and provisioning model allowed (TPU VMs included)."""
    return run_advise(
        AdviseOptions(
            prompt_tokens=4096,
            output_tokens=512,
            users=8,
            models=(MODEL,),
            provisioning=("on-demand", "spot"),
            top=500,
            adapters=adapters,
        )
    )


@pytest.fixture(scope="module")
def answers() -> tuple[AdviseReport, AdviseReport]:
    return _ask(None), _ask(THREE_OF_RANK_16)


def test_three_adapters_of_rank_16_never_rank_a_row_that_cannot_serve_them(
    answers: tuple[AdviseReport, AdviseReport],
) -> None:
    """Without adapters the cheapest answers include TPU rows; with three rank-16 adapters none is ranked (vllm-tpu
    0.32 has no LoRA for Gemma 4: docs/adapters.md), each TPU row is counted as unable to serve them, and every
    ranked row runs vLLM with enough LoRA slots and a rank that holds the adapters."""
    base, adapted = answers
    assert any(accelerator_facts(row.accelerator).family == "tpu" for row in base.rows)
    assert adapted.rows
    assert all(accelerator_facts(row.accelerator).family != "tpu" for row in adapted.rows)
    refused = {e.reason: e for e in adapted.excluded}
    assert CANNOT_SERVE in refused
    tpu_rows = {(r.model, r.variant, r.shape) for r in base.rows if accelerator_facts(r.accelerator).family == "tpu"}
    assert refused[CANNOT_SERVE].count >= len({shape for _, _, shape in tpu_rows})
    for row in adapted.rows:
        serves = [caveat for caveat in row.caveats if caveat.startswith("serves 3 LoRA adapter(s) of rank 16")]
        assert serves, row.caveats
        assert "--max-loras 4 --max-lora-rank 16" in serves[0]
    assert "3 LoRA adapter(s) of rank 16" in adapted.workload


def test_the_adapters_memory_comes_out_of_each_rows_kv_cache(answers: tuple[AdviseReport, AdviseReport]) -> None:
    """The LoRA slots' GPU memory (0.49 GiB on the 12B at 4 slots of rank 16) is in the capacity plan each row is
    sized by: no row holds more requests with adapters than without, and at least one holds fewer."""
    base, adapted = answers
    assert reserved_bytes(THREE_OF_RANK_16, catalog_model(MODEL)) > 0
    caps = {(r.variant, r.shape, r.platform, r.provisioning): r.batch_cap for r in base.rows}
    compared = [
        (caps[key], row.batch_cap)
        for row in adapted.rows
        if (key := (row.variant, row.shape, row.platform, row.provisioning)) in caps
    ]
    assert compared
    assert all(with_adapters <= without for without, with_adapters in compared)
    assert any(with_adapters < without for without, with_adapters in compared)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--adapter-rank", "16"], "give --adapters N"),
        (["--adapters", "65"], "--adapters 65"),
        (["--adapters", "3", "--adapter-rank", "1024"], "--max-lora-rank 512"),
        (["--adapters", "3", "--adapter-share", "0"], "--adapter-share 0"),
    ],
)
def test_adapter_flags_out_of_bounds_exit_2_naming_the_flag(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rank vLLM cannot be started for, more adapters than a stack may declare, or a rank without a count must
    not be dropped or answered as if it fit: exit 2 naming the flag."""
    code = verify_main(["advise", "--prompt-tokens", "1024", "--output-tokens", "128", "--users", "4", *flags])
    assert code == 2
    assert message in capsys.readouterr().err


async def test_the_mcp_advise_tool_takes_the_adapters() -> None:
    """An agent asking for three rank-16 adapters through the SDK gets only rows that serve them."""
    async with connect() as client:
        result = await client.call_tool(
            "advise",
            {
                "prompt_tokens": 1024,
                "output_tokens": 128,
                "users": 4,
                "models": [MODEL],
                "provisioning": ["spot"],
                "platforms": ["tpu", "gke"],
                "adapters": 3,
                "adapter_rank": 16,
                "adapter_share": 0.5,
                "top": 3,
            },
        )
    assert not result.is_error, text_of(result)
    report = result.structured_content
    assert report["rows"]
    assert all(accelerator_facts(row["accelerator"]).family != "tpu" for row in report["rows"])
    assert "50% of requests" in report["workload"]
