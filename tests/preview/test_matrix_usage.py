"""`make matrix`, `advise` and the MCP `fit` tool answer a choice nobody offers as a usage error naming the flag.

Red team (issue 46): `make matrix --model gemma-4-12b-it --variant nvfp4` (the 12B has no NVFP4 checkpoint)
printed an empty table with exit 0, `--kv-cache-dtype bogus` and `--context 1000000000000` printed rows of "no",
and the MCP `fit` tool answered "does not fit" for a variant of another model: a typo read as a verdict about the
hardware. Each is exit 2 (a tool error for MCP) naming the flag and listing what is allowed.
"""

from __future__ import annotations

import pytest

from preview.matrix import main as matrix_main
from tests.gemma_mcp.conftest import connect, text_of
from verify.cli import main as verify_main

# (flags, the flag named, a value the message lists as allowed)
TYPOS = [
    (["--model", "gemma-4-12b-it", "--variant", "nvfp4"], "--variant 'nvfp4'", "gemma-4-12b-it: bf16, qat-w4a16-ct"),
    (["--kv-cache-dtype", "bogus"], "--kv-cache-dtype 'bogus'", "auto, bfloat16, float16, fp8"),
    (["--model", "gemma-4-12b-b"], "--model 'gemma-4-12b-b'", "gemma-4-12b-it"),
]


@pytest.mark.parametrize(("flags", "named", "allowed"), TYPOS)
def test_the_matrix_refuses_a_choice_nobody_offers(
    capsys: pytest.CaptureFixture[str], flags: list[str], named: str, allowed: str
) -> None:
    """Exit 2 with the flag and what is allowed, and no table (an empty one, or rows of "no", read as a verdict)."""
    assert matrix_main([*flags, "--shape", "l4"]) == 2
    captured = capsys.readouterr()
    assert named in captured.err
    assert f"allowed: {allowed}" in captured.err
    assert captured.out == ""


def test_the_matrix_refuses_a_request_longer_than_any_model_asked_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """`--context 1000000000000` printed a row of "no" per combination; the longest model takes 262,144 tokens (and
    the E2B 131,072: the bound is the models asked's), so the flag is refused with the bound. At the bound, rows."""
    assert matrix_main(["--context", "1000000000000", "--shape", "l4"]) == 2
    assert "--context 1000000000000: " in capsys.readouterr().err
    assert matrix_main(["--model", "gemma-4-e2b-it", "--context", "131000", "--output", "100", "--shape", "l4"]) == 2
    assert "allowed: at most 131,072 tokens in all (gemma-4-e2b-it's" in capsys.readouterr().err
    assert matrix_main(["--model", "gemma-4-e2b-it", "--context", "130048", "--shape", "l4", "--format", "json"]) == 0
    assert '"model": "gemma-4-e2b-it"' in capsys.readouterr().out


def test_a_variant_one_of_the_models_asked_has_is_answered() -> None:
    """The check is per model asked: the 31B's NVFP4 beside the 12B is a real question (the 12B rows are left out)."""
    assert matrix_main(["--model", "gemma-4-12b-it", "--model", "gemma-4-31b-it", "--variant", "nvfp4"]) == 0


ADVISE = ["advise", "--prompt-tokens", "1024", "--output-tokens", "256", "--users", "4"]


@pytest.mark.parametrize(
    ("flags", "named", "allowed"),
    [*TYPOS, (["--prompt-tokens", "1000000000000"], "--prompt-tokens 1000000000000", "at most 262,144 tokens")],
)
def test_advise_refuses_a_choice_nobody_offers(
    capsys: pytest.CaptureFixture[str], flags: list[str], named: str, allowed: str
) -> None:
    """`advise` ranked nothing and exited 0 for the same typos (and priced no row for an absurd prompt)."""
    assert verify_main([*ADVISE, *flags]) == 2
    err = capsys.readouterr().err
    assert named in err
    assert f"allowed: {allowed}" in err


async def test_the_fit_tool_answers_a_typo_as_a_tool_error() -> None:
    """The MCP `fit` tool answered "does not fit" for the 12B's "nvfp4": a tool error now, naming the argument."""
    async with connect() as client:
        variant = await client.call_tool("fit", {"model": "gemma-4-12b-it", "variant": "nvfp4", "shape": "l4"})
        context = await client.call_tool(
            "fit", {"model": "gemma-4-12b-it", "shape": "l4", "context_tokens": 1_000_000_000_000}
        )
    assert variant.is_error
    assert "variant 'nvfp4'" in text_of(variant)
    assert "allowed: gemma-4-12b-it: bf16" in text_of(variant)
    assert context.is_error
    assert "context_tokens 1000000000000" in text_of(context)


async def test_the_advise_tool_answers_a_typo_as_a_tool_error() -> None:
    """The MCP `advise` tool builds the same options as the command: the 12B's "nvfp4" ranked nothing; now an
    error naming the variant and the 12B's own variants."""
    question = {"prompt_tokens": 1024, "output_tokens": 256, "users": 4}
    async with connect() as client:
        result = await client.call_tool("advise", {**question, "models": ["gemma-4-12b-it"], "variants": ["nvfp4"]})
    assert result.is_error
    assert "--variant 'nvfp4'" in text_of(result)
    assert "allowed: gemma-4-12b-it: bf16" in text_of(result)
