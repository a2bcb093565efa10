"""`model: {id, variant, revision}`: a stack names a catalog checkpoint, and the rest follows from it.

Why: a stack used to spell out the bucket path, the Hugging Face repo, `--quantization`, `--dtype`, the
drafter's path and its repo, each of which could contradict the checkpoint. Here a stack writes the
catalog id, the variant and the pinned revision (serving/catalog), and this module fills in what the
catalog and the accelerator decide, before validation, into the same settings the long form writes:
`model.path`, `model.source`, `vllm.quantization`, `vllm.dtype`, the variant's own vLLM arguments (an
FP8 checkpoint's `--kv-cache-dtype fp8`), the MTP drafter (`vllm.speculative.drafter`,
`model.drafterSource`, upstream's speculative tokens) and a TPU slice's tensor-parallel size. Whatever
the stack states explicitly wins; stacks/catalog_checks.py then refuses what contradicts the variant.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

from serving.catalog import CatalogModel, Variant, catalog, catalog_model
from serving.tpu_offers import V6E_CHIPS
from stacks.revisions import revision_problem

# The keys only the short form writes (`model: {id, variant, revision}`); the long form pins
# model.source.huggingFace.revision instead.
_SHORT_FORM_KEYS = ("variant", "revision", "drafterRevision", "drafter_revision")
# The keys the catalog decides for a short-form model: written beside model.id, they would silently
# override (or contradict) the catalog.
_CATALOG_DECIDES = ("path", "source", "drafterSource", "drafter_source")

# The variant arguments that have a typed vLLM setting (filled when unset); the rest join extraArgs.
_TYPED_FLAGS = {"--kv-cache-dtype": "kvCacheDtype"}


def _key(block: dict[str, Any], camel: str) -> str | None:
    """Which spelling of a key a raw block uses (camelCase as stack files write it, or snake_case)."""
    snake = "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in camel)
    for key in (camel, snake):
        if key in block:
            return key
    return None


def _get(block: dict[str, Any], camel: str) -> Any:  # noqa: ANN401 - raw stack data
    key = _key(block, camel)
    return block[key] if key else None


def _default(block: dict[str, Any], camel: str, value: Any) -> None:  # noqa: ANN401 - raw stack data
    if _key(block, camel) is None:
        block[camel] = value


def _lookup(model: dict[str, Any]) -> tuple[CatalogModel, str, Variant]:
    model_id = model.get("id")
    if not isinstance(model_id, str) or model_id not in catalog():
        raise ValueError(f"model.id: {model_id!r} is not a catalog model; allowed: {', '.join(catalog())}")
    found = catalog_model(model_id)
    name = model.get("variant")
    if not isinstance(name, str) or name not in found.variants:
        raise ValueError(
            f"model.variant: {name!r} is not a variant of {model_id}; allowed: {', '.join(found.variants)} "
            "(serving/catalog/models/" + model_id + ".json says what each is and where it runs)"
        )
    return found, name, found.variants[name]


def _unknown_key_problem(block: dict[str, Any], allowed: Collection[str], prefix: str) -> str | None:
    """A misspelt key in a block this module reads before validation, named with what it was probably meant to be.

    Why before the lookup: `varaint: bf16` otherwise reads as a missing variant ("model.variant: None is not
    a variant"), and `speculative: {methd: mtp}` as a missing drafter revision, sending the reader after a
    key they did write.
    """
    for key in block:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
        hint = f"did you mean {prefix}.{close[0]}? " if close else ""
        written = sorted(name for name in allowed if "_" not in name)  # as stack files write them
        return f"{prefix}.{key}: unknown key (a typo?); {hint}allowed here: {', '.join(written)}"
    return None


def _typo_problem(data: dict[str, Any], keys: Mapping[str, Collection[str]]) -> str | None:
    """The first unknown key in the blocks `keys` names (dotted paths such as `vllm.speculative`)."""
    for path, allowed in keys.items():
        block: Any = data
        for part in path.split("."):
            block = block.get(part) if isinstance(block, dict) else None
        if isinstance(block, dict) and (problem := _unknown_key_problem(block, allowed, path)):
            return problem
    return None


def resolve_catalog_model(data: Any, keys: Mapping[str, Collection[str]] | None = None) -> Any:  # noqa: ANN401 - raw stack data
    """Expand a stack's `model: {id, variant, revision}` into the long form; other stacks pass unchanged.

    ``keys`` are the keys each block read here may hold (`model`, `vllm.speculative`; camelCase and
    snake_case); a key outside them is reported by its own name, before it can be mistaken for a missing one.
    """
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return data
    written = data["model"]
    if keys and (problem := _typo_problem(data, keys)):
        raise ValueError(problem)
    if "id" not in written:
        short = [key for key in _SHORT_FORM_KEYS if key in written]
        if short:
            raise ValueError(
                f"model.id: required with model.{short[0]}: the catalog model whose variant and commit these name; "
                f"allowed: {', '.join(catalog())} (or the long form: model.path with model.source.huggingFace)"
            )
        return data
    data = dict(data)
    model = dict(written)
    found, _, variant = _lookup(model)
    for key in _CATALOG_DECIDES:
        if key in model:
            decided = "its bucket path" if key == "path" else "its repo"
            pin = "model.drafterRevision" if "rafter" in key else "model.revision"
            raise ValueError(
                f"model.{key}: a catalog model (model.id {found.id}) takes {decided} from the catalog; remove "
                f"model.{key} and pin the commit with {pin}"
            )
    if problem := revision_problem("model.revision", variant.repo, model.get("revision")):
        raise ValueError(problem)
    model["path"] = variant.leaf
    _default(model, "servedName", found.id)
    model["source"] = {"huggingFace": {"repo": variant.repo, "revision": model["revision"]}}
    data["model"] = model
    if not isinstance(data.get("vllm"), dict):
        return data  # the missing vllm block is reported by name
    vllm = dict(data["vllm"])
    if variant.quant_method:
        _default(vllm, "quantization", variant.quant_method)
    _default(vllm, "dtype", variant.dtype)
    _variant_args(vllm, variant)
    _drafter(model, vllm, found, variant)
    if data.get("accelerator") == "tpu-v6e" and "gke" not in data:  # a queued-resource node (GKE sizes its own)
        tpu = data.get("tpu") if isinstance(data.get("tpu"), dict) else {}
        chips = V6E_CHIPS.get(str(_get(tpu, "acceleratorType") or "v6e-1"))
        if chips is not None:
            _default(vllm, "tensorParallelSize", chips)
    data["model"] = model
    data["vllm"] = vllm
    return data


def _variant_args(vllm: dict[str, Any], variant: Variant) -> None:
    """The checkpoint's own vLLM arguments (recipe `extra_args`): typed ones as defaults, others appended."""
    args = list(variant.vllm_args)
    extra = list(_get(vllm, "extraArgs") or [])
    index = 0
    while index < len(args):
        flag = args[index]
        value = args[index + 1] if index + 1 < len(args) and not args[index + 1].startswith("--") else None
        index += 2 if value is not None else 1
        if flag in _TYPED_FLAGS and value is not None:
            _default(vllm, _TYPED_FLAGS[flag], value)
        elif flag not in extra:
            extra += [flag, *([value] if value is not None else [])]
    if extra:
        vllm[_key(vllm, "extraArgs") or "extraArgs"] = extra


def _drafter(model: dict[str, Any], vllm: dict[str, Any], found: CatalogModel, variant: Variant) -> None:
    """MTP with the variant's `-assistant` drafter from the catalog, unless the stack names another."""
    speculative = _get(vllm, "speculative")
    if not isinstance(speculative, dict):
        if "drafterRevision" in model or "drafter_revision" in model:
            raise ValueError("model.drafterRevision: there is no vllm.speculative (method mtp) to draft with it")
        return
    if (_get(speculative, "method") or "mtp") != "mtp":
        return  # another method drafts without the catalog's MTP drafter (its own settings say how)
    speculative = dict(speculative)
    drafter = found.drafters.get(variant.drafter) or found.drafters[found.default_drafter]
    _default(speculative, "drafter", drafter.leaf)
    _default(speculative, "numSpeculativeTokens", drafter.num_speculative_tokens)
    vllm[_key(vllm, "speculative") or "speculative"] = speculative
    revision = _get(model, "drafterRevision")
    named = str(_get(speculative, "drafter")).strip("/").rsplit("/", 1)[-1]
    repo = next((d.repo for d in found.drafters.values() if d.leaf.lower() == named.lower()), None)
    if repo is None:
        return  # not one of this model's drafters: stacks/catalog_checks.py says whose it is
    if not isinstance(revision, str):
        raise ValueError(
            f"model.drafterRevision: required with vllm.speculative: the 40-hex commit of {repo} (the MTP drafter "
            "the catalog pairs with this variant) to import beside the model"
        )
    if problem := revision_problem("model.drafterRevision", repo, revision):
        raise ValueError(problem)
    model["drafterSource"] = {"huggingFace": {"repo": repo, "revision": revision}}
