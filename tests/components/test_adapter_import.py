"""The import job for one version of a LoRA adapter: checked before anything is written, never overwriting a
version replicas may serve, and loadable only once every weight is in.

The bucket is a fake of the whole `adapters/` tree, so each failure mode can be run while another version
(`v1`, the one the route table serves) sits beside it; `served_version_answers` asks what vLLM's filesystem
resolver asks of a folder before it loads it (vllm/plugins/lora_resolvers/filesystem_resolver.py, 0.32:
`adapter_config.json` exists, `peft_type` LORA, `base_model_name_or_path` equal to the served model) and
that its bytes are the ones imported.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from job_scripts.import_weights import (
    ADAPTER_CONFIG,
    ADAPTER_RECORD,
    MARKER_NAME,
    AdapterCheck,
    AdapterMismatchError,
    CopyFailedError,
    Destination,
    Readable,
    SourceChangedError,
    SourceFile,
    StoredObject,
    TensorInfo,
    VersionTakenError,
    lora_tensor_problems,
    run_import,
    safetensors_header,
)
from serving.catalog import catalog_model
from serving.lora_shapes import layer_shapes
from tests.components.safetensors_files import lora_tensors, safetensors_bytes
from tests.components.test_model_import_job import FIXED_CLOCK, quiet

SERVED = "/mnt/models/tiny"
# The live tests' tiny Llama-style model (tests/live/make_tiny_model.py): 128 wide, 4 heads of 32, 2 KV heads.
TINY = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
}
SHAPES = layer_shapes(TINY)
WEIGHTS = "adapter_model.safetensors"


def check(version: str = "v2", **changes: Any) -> AdapterCheck:
    fields: dict[str, Any] = {
        "name": "support-bot",
        "bases": ("acme/tiny",),
        "rank": 8,
        "target_modules": ("q_proj", "v_proj"),
        "served_model_path": SERVED,
        "version": version,
        "layer_kinds": SHAPES.layer_kinds,
        "kind_shapes": SHAPES.kind_shapes,
    }
    fields.update(changes)
    return AdapterCheck(**fields)


def adapter_files(*, tensors: Mapping[str, tuple[int, ...]] | None = None, **config: Any) -> dict[str, bytes]:
    peft = {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["v_proj", "q_proj"]}
    peft["base_model_name_or_path"] = "acme/tiny"
    peft.update(config)
    weights = tensors if tensors is not None else lora_tensors(SHAPES, 8, ("q_proj", "v_proj"))
    return {ADAPTER_CONFIG: json.dumps(peft).encode(), WEIGHTS: safetensors_bytes(weights)}


@dataclass
class BucketTree:
    """The model bucket's `adapters/` tree in memory; `folder(name)` is the view one import job writes."""

    objects: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)

    def folder(self, prefix: str) -> Folder:
        return Folder(self, prefix.rstrip("/") + "/")

    def under(self, prefix: str) -> dict[str, bytes]:
        return {name: data for name, data in self.objects.items() if name.startswith(prefix.rstrip("/") + "/")}


@dataclass
class Folder:
    tree: BucketTree
    prefix: str

    def list(self) -> dict[str, StoredObject]:
        return {
            name[len(self.prefix) :]: StoredObject(len(data), self.tree.versions.get(name))
            for name, data in self.tree.objects.items()
            if name.startswith(self.prefix)
        }

    def read_text(self, name: str) -> str | None:
        data = self.tree.objects.get(self.prefix + name)
        return data.decode() if data is not None else None

    def write_text(self, name: str, text: str) -> None:
        self.tree.events.append(f"write {self.prefix}{name}")
        self.tree.objects[self.prefix + name] = text.encode()
        self.tree.versions[self.prefix + name] = None

    def delete(self, name: str) -> None:
        self.tree.events.append(f"delete {self.prefix}{name}")
        self.tree.objects.pop(self.prefix + name, None)

    def upload(self, name: str, stream: Readable, version: str) -> None:
        self.tree.events.append(f"upload {self.prefix}{name}")
        self.tree.objects[self.prefix + name] = stream.read()
        self.tree.versions[self.prefix + name] = version


@dataclass
class AdapterSource:
    """A training bucket's folder; `cut_after` bytes of a weight file are written before the copy breaks, and
    `rewrite_during_copy` replaces a file's content while it is being copied (a training job re-saving)."""

    files: dict[str, bytes]
    uri: str = "gs://acme-adapters/support-bot/v2"
    generation: int = 1
    cut_after: int | None = None
    rewrite_during_copy: dict[str, bytes] = field(default_factory=dict)

    def pinned_revision(self) -> str | None:
        return None

    def manifest(self) -> dict[str, SourceFile]:
        return {name: SourceFile(len(data), f"crc:{self.generation}") for name, data in self.files.items()}

    def read_text(self, name: str) -> str | None:
        data = self.files.get(name)
        return data.decode() if data is not None else None

    def read_range(self, name: str, file: SourceFile, start: int, length: int) -> bytes:
        del file
        return self.files[name][start : start + length]

    def copy(self, name: str, file: SourceFile, destination: Destination) -> None:
        data = self.files[name]
        if self.cut_after is not None and name == WEIGHTS:
            destination.upload(name, io.BytesIO(data[: self.cut_after]), file.version)
            raise ConnectionError("the connection was cut mid-copy")
        destination.upload(name, io.BytesIO(data), file.version)
        if self.rewrite_during_copy:
            self.files.update(self.rewrite_during_copy)
            self.rewrite_during_copy = {}
            self.generation += 1


def import_version(tree: BucketTree, source: AdapterSource, version: str = "v2", **changes: Any) -> None:
    folder = tree.folder(f"adapters/support-bot@{version}")
    run_import(
        source,
        folder,
        workers=1,
        log=quiet,
        clock=lambda: FIXED_CLOCK,
        sleep=lambda _s: None,
        adapter=check(version, **changes),
    )


def served_tree() -> tuple[BucketTree, dict[str, bytes]]:
    """A bucket where support-bot@v1 is imported (the version the route table serves)."""
    tree = BucketTree()
    import_version(tree, AdapterSource(adapter_files(), uri="gs://acme-adapters/support-bot/v1"), "v1")
    return tree, tree.under("adapters/support-bot@v1")


def loadable(tree: BucketTree, folder: str) -> bool:
    """What vLLM's filesystem resolver checks before it loads `folder` as an adapter."""
    text = tree.objects.get(f"{folder}/{ADAPTER_CONFIG}")
    if text is None:
        return False
    config = json.loads(text)
    return bool(config.get("peft_type") == "LORA" and config.get("base_model_name_or_path") == SERVED)


def served_version_answers(tree: BucketTree, before: dict[str, bytes]) -> bool:
    return loadable(tree, "adapters/support-bot@v1") and tree.under("adapters/support-bot@v1") == before


def test_version_is_finalised_for_vllms_resolver_and_its_config_written_after_every_weight() -> None:
    """A folder vLLM can load must hold every weight: the config (what makes it loadable) comes after them,
    the completion marker last."""
    tree = BucketTree()
    import_version(tree, AdapterSource(adapter_files()))
    folder = "adapters/support-bot@v2"
    assert loadable(tree, folder)
    record = json.loads(tree.objects[f"{folder}/{ADAPTER_RECORD}"])
    assert (record["trainedOn"], record["version"], record["shapesChecked"]) == ("acme/tiny", "v2", True)
    assert tree.events[-4:] == [
        f"upload {folder}/{WEIGHTS}",
        f"write {folder}/{ADAPTER_RECORD}",
        f"write {folder}/{ADAPTER_CONFIG}",
        f"write {folder}/{MARKER_NAME}",
    ]


def test_second_run_of_the_same_version_changes_nothing() -> None:
    """Every `pulumi up` reruns the job: a complete version must not be rewritten (replicas may be loading it)."""
    tree, before = served_tree()
    events = len(tree.events)
    import_version(tree, AdapterSource(adapter_files(), uri="gs://acme-adapters/support-bot/v1"), "v1")
    assert tree.events[events:] == []
    assert served_version_answers(tree, before)


def test_failed_check_writes_nothing_and_the_served_version_still_answers() -> None:
    """Failure mode 1: the new version's check fails. Nothing of it may be written, and v1 keeps serving."""
    tree, before = served_tree()
    wrong = lora_tensors(SHAPES, 8, ("q_proj", "v_proj"))
    wrong["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"] = (96, 8)
    with pytest.raises(AdapterMismatchError, match=r"q_proj\.lora_B\.weight is 96x8, expected 128x8"):
        import_version(tree, AdapterSource(adapter_files(tensors=wrong)))
    assert tree.under("adapters/support-bot@v2") == {}
    assert served_version_answers(tree, before)


def test_cut_copy_leaves_the_version_unloadable_then_resumes() -> None:
    """Failure mode 2: the copy is cut mid-file. The half-copied version must never be loadable (no config),
    v1 keeps serving, and the next run finishes the version."""
    tree, before = served_tree()
    source = AdapterSource(adapter_files(), cut_after=100)
    with pytest.raises(CopyFailedError):
        import_version(tree, source)
    assert f"adapters/support-bot@v2/{WEIGHTS}" in tree.objects
    assert not loadable(tree, "adapters/support-bot@v2")
    assert served_version_answers(tree, before)
    source.cut_after = None
    import_version(tree, source)
    assert loadable(tree, "adapters/support-bot@v2")
    assert served_version_answers(tree, before)


def test_source_changing_during_the_copy_is_not_made_loadable() -> None:
    """Failure mode 3: the training job re-saves the adapter while it is copied. The copy may mix the two, so it
    is never made loadable; v1 keeps serving; the next run copies what the source holds then."""
    tree, before = served_tree()
    resaved = adapter_files(lora_alpha=32)
    source = AdapterSource(adapter_files(), rewrite_during_copy={ADAPTER_CONFIG: resaved[ADAPTER_CONFIG]})
    with pytest.raises(SourceChangedError, match="changed while it was copied"):
        import_version(tree, source)
    assert not loadable(tree, "adapters/support-bot@v2")
    assert served_version_answers(tree, before)


def test_another_source_under_a_served_version_is_refused_and_the_version_kept() -> None:
    """A version is immutable once loadable: pointing v1 at new weights must not rewrite what replicas serve."""
    tree, before = served_tree()
    retrained = AdapterSource(adapter_files(lora_alpha=64), uri="gs://acme-adapters/support-bot/retrained")
    with pytest.raises(VersionTakenError, match=r"support-bot@v1: it already holds gs://acme-adapters/support-bot/v1"):
        import_version(tree, retrained, "v1")
    assert served_version_answers(tree, before)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"r": 64}, "r is 64"),
        ({"base_model_name_or_path": "google/gemma-4-31B-it"}, "trained on 'google/gemma-4-31B-it'"),
        ({"target_modules": ["q_proj", "v_proj", "lm_head"]}, "targets"),
        ({"peft_type": "IA3"}, "peft_type"),
        ({"use_dora": True}, "DoRA"),
        ({"rank_pattern": {"q_proj": 4}}, "rank_pattern"),
    ],
)
def test_mismatched_config_is_refused_before_anything_is_written(change: dict[str, Any], named: str) -> None:
    """A mismatched adapter would fail (or, worse, load) at its first request in production; refused by name."""
    tree = BucketTree()
    with pytest.raises(AdapterMismatchError, match=named):
        import_version(tree, AdapterSource(adapter_files(**change)))
    assert tree.objects == {}


def test_pickled_weights_and_missing_config_are_refused() -> None:
    """A pickle runs code when loaded and cannot be checked; a folder without adapter_config.json is no PEFT adapter."""
    files = {**adapter_files(), "adapter_model.bin": b"\x80\x04pickle"}
    with pytest.raises(AdapterMismatchError, match="is a pickle"):
        import_version(BucketTree(), AdapterSource(files))
    with pytest.raises(AdapterMismatchError, match=r"no adapter_config\.json"):
        import_version(BucketTree(), AdapterSource({WEIGHTS: adapter_files()[WEIGHTS]}))


def test_cut_or_foreign_safetensors_file_is_refused() -> None:
    """A header length past the file (a cut upload) or a file that is not safetensors at all is named."""
    whole = adapter_files()[WEIGHTS]
    for broken in (whole[:40], b"PK\x03\x04" + whole[4:], b"\x00" * 4):
        with pytest.raises(AdapterMismatchError, match=WEIGHTS):
            import_version(BucketTree(), AdapterSource({**adapter_files(), WEIGHTS: broken}))


def test_header_is_read_with_offsets_and_sizes_checked() -> None:
    """The hand-written reader must agree with the format: the shapes it returns, and data that does not fill
    its offsets refused."""
    data = safetensors_bytes({"a": (2, 3)}, dtype="F32")
    assert safetensors_header(lambda s, n: data[s : s + n], len(data), "x") == {"a": TensorInfo("F32", (2, 3))}
    header = json.dumps({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}}).encode()
    bad = len(header).to_bytes(8, "little") + header + b"\x00" * 24
    with pytest.raises(ValueError, match="does not fill 20 bytes"):
        safetensors_header(lambda s, n: bad[s : s + n], len(bad), "x")


def test_tensor_names_outside_the_declared_decoder_modules_are_named() -> None:
    """Tower, embedding and undeclared-module tensors would be ignored or refused by vLLM at load time."""
    tensors = {
        "base_model.model.model.vision_tower.layers.0.self_attn.q_proj.lora_A.weight": TensorInfo("BF16", (8, 128)),
        "base_model.model.lm_head.lora_A.weight": TensorInfo("BF16", (8, 128)),
        "base_model.model.model.layers.0.mlp.up_proj.lora_A.weight": TensorInfo("BF16", (8, 128)),
        "base_model.model.model.layers.0.mlp.up_proj.lora_B.weight": TensorInfo("BF16", (256, 8)),
        "base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight": TensorInfo("BF16", (8, 128)),
        "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight": TensorInfo("BF16", (8, 128)),
    }
    problems = "\n".join(lora_tensor_problems(tensors, check(), WEIGHTS))
    assert "vision_tower" in problems
    assert "lm_head" in problems
    assert "adapts up_proj; allowed: q_proj, v_proj" in problems
    assert "layer 7; the model has 2" in problems
    assert "layer 1 q_proj has lora_A only" in problems


def test_gemma_4_12b_full_attention_layers_take_their_own_shapes() -> None:
    """On the 12B a full-attention layer's q_proj is 8192 wide (global_head_dim 512) and has no v_proj
    (attention_k_eq_v): a LoRA shaped for the sliding layers everywhere is refused there."""
    shapes = layer_shapes(catalog_model("gemma-4-12b-it").text_config)
    full = shapes.layer_kinds.index("full_attention")
    assert shapes.modules_of(full)["q_proj"] == (3840, 8192)
    assert "v_proj" not in shapes.modules_of(full)
    assert shapes.modules_of(0)["v_proj"] == (3840, 2048)
    sliding_everywhere = {
        f"base_model.model.model.language_model.layers.{layer}.self_attn.q_proj.lora_{part}.weight": TensorInfo(
            "BF16", (16, 3840) if part == "A" else (4096, 16)
        )
        for layer in range(len(shapes.layer_kinds))
        for part in "AB"
    }
    gemma = check(
        bases=("gemma-4-12b-it",),
        rank=16,
        target_modules=("q_proj",),
        layer_kinds=shapes.layer_kinds,
        kind_shapes=shapes.kind_shapes,
    )
    problems = lora_tensor_problems(sliding_everywhere, gemma, WEIGHTS)
    assert len(problems) == shapes.layer_kinds.count("full_attention")
    assert f"layers.{full}.self_attn.q_proj.lora_B.weight is 4096x16, expected 8192x16" in problems[0]
