"""What a capacity question may name: catalog models, their own variants, the KV-cache dtypes the planner sizes,
and a request no longer than the longest model takes. Each problem names the flag and lists what is allowed.

Why: `make matrix --model gemma-4-12b-it --variant nvfp4` (the 12B has no NVFP4 checkpoint) printed an empty
table with exit 0, `--kv-cache-dtype bogus` and `--context 1000000000000` printed rows of "no", `advise` ranked
nothing for the same typos, and the MCP `fit` tool answered "does not fit" for a variant of another model: a
typo read as a verdict about the hardware (issue 46). The matrix (and the `fit` tool, which runs it) and `advise`
ask these here, so the three refuse the same things with the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

from serving.catalog import CatalogModel, catalog
from serving.planner import KV_ELEMENTS

# `auto` (the model's own dtype) and every dtype the capacity planner has an element size for
# (serving/planner.py, from vLLM 0.32's `--kv-cache-dtype` choices).
KV_CACHE_DTYPES: tuple[str, ...] = ("auto", *KV_ELEMENTS)


def _asked(models: Sequence[str]) -> list[CatalogModel]:
    """The catalog models named (those that exist), or every model when none is named."""
    known = catalog()
    return [known[m] for m in models if m in known] if models else list(known.values())


def model_problems(models: Sequence[str], *, flag: str = "--model") -> list[str]:
    """A model id the catalog does not hold (listing the ids it does)."""
    known = catalog()
    return [f"{flag} {m!r}: not a catalog model; allowed: {', '.join(known)}" for m in models if m not in known]


def variant_problems(models: Sequence[str], variants: Sequence[str], *, flag: str = "--variant") -> list[str]:
    """A variant none of the named models (or, with none named, no catalog model) publishes."""
    asked = _asked(models)
    offered = sorted({name for model in asked for name in model.variants})
    if models:
        why = "no such variant of the models asked"
        allowed = "; ".join(f"{model.id}: {', '.join(model.variants)}" for model in asked)
    else:
        why, allowed = "no catalog model has it", ", ".join(offered)
    return [f"{flag} {v!r}: {why}; allowed: {allowed}" for v in variants if v not in offered]


def kv_cache_dtype_problem(value: str, *, flag: str = "--kv-cache-dtype") -> str | None:
    """A dtype the planner has no element size for: every row would be a refusal about a typo."""
    if value in KV_CACHE_DTYPES:
        return None
    return f"{flag} {value!r}: not a KV-cache dtype the capacity planner sizes; allowed: {', '.join(KV_CACHE_DTYPES)}"


def longest_context(models: Sequence[str] = ()) -> tuple[int, str]:
    """The most tokens (prompt and output) any of the models asked takes, and that model's id."""
    asked = _asked(models) or list(catalog().values())
    model = max(asked, key=lambda m: m.architecture.max_position_embeddings or 0)
    return model.architecture.max_position_embeddings or 0, model.id


def context_problem(prompt_tokens: int, output_tokens: int, models: Sequence[str] = (), *, flag: str) -> str | None:
    """A request (prompt and output) longer than the longest model asked takes: no row could answer it, so it is
    a usage error naming ``flag`` (the one that set the prompt), not a table of "no"."""
    longest, model = longest_context(models)
    if prompt_tokens + output_tokens <= longest:
        return None
    return (
        f"{flag} {prompt_tokens}: {prompt_tokens:,} prompt + {output_tokens:,} output tokens is longer than any model "
        f"asked takes; allowed: at most {longest:,} tokens in all ({model}'s max_position_embeddings)"
    )
