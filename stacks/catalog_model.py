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

from typing import Any

from serving.catalog import CatalogModel, Variant, catalog, catalog_model
from serving.shapes import tpu_slices

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


def resolve_catalog_model(data: Any) -> Any:  # noqa: ANN401 - raw stack data, before validation
    """Expand a stack's `model: {id, variant, revision}` into the long form; other stacks pass unchanged."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict) or "id" not in data["model"]:
        return data
    data = dict(data)
    model = dict(data["model"])
    found, _, variant = _lookup(model)
    for written in ("source", "drafterSource", "drafter_source"):
        if written in model:
            raise ValueError(
                f"model.{written}: a catalog model (model.id {found.id}) takes its repo from the catalog; remove "
                f"model.{written} and pin the commit with model.revision"
                + (" / model.drafterRevision" if "rafter" in written else "")
            )
    if not isinstance(model.get("revision"), str):
        raise ValueError(
            f"model.revision: required with model.id: the 40-hex commit of {variant.repo} to serve "
            "(copy it from the repo's commit history)"
        )
    _default(model, "path", variant.leaf)
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
    slices = tpu_slices(str(data.get("accelerator")))  # empty unless the accelerator is a TPU generation
    if slices and "gke" not in data:  # a queued-resource node (GKE sizes its own)
        tpu = data.get("tpu") if isinstance(data.get("tpu"), dict) else {}
        chips = slices.get(str(_get(tpu, "acceleratorType") or min(slices, key=lambda name: slices[name])))
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
    model["drafterSource"] = {"huggingFace": {"repo": repo, "revision": revision}}
