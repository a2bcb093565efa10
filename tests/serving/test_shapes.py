"""The shapes table (serving/data/shapes.json): every fact sourced, every reference resolved, read once."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from pydantic import ValidationError

from serving.shapes import (
    ShapesTable,
    accelerator_facts,
    flex_start_zones,
    gke_zones,
    machine_family,
    shape,
    shapes,
    shapes_table,
    tpu_slices,
    zones_of,
)


def _raw() -> dict[str, object]:
    text = resources.files("serving").joinpath("data", "shapes.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def test_the_table_is_read_once() -> None:
    """Every import of a shape's facts must see the same object, not re-read the file per call."""
    assert shapes_table() is shapes_table()


def test_each_shape_knows_its_name_and_its_accelerator() -> None:
    """A shape whose accelerator or machine series is missing would plan against nothing."""
    for entry in shapes():
        assert shape(entry.name) is entry
        accelerator_facts(entry.accelerator)
        if entry.platform == "gke":
            assert machine_family(entry).quota
        assert zones_of(entry), entry.name


def test_g2_machine_types_carry_googles_gpu_counts() -> None:
    """Only g2-standard-24 has two L4s; a table saying otherwise mis-sizes tensor parallel."""
    counts = {entry.name: entry.accelerators for entry in shapes(platform="gke", accelerator="nvidia-l4")}
    assert counts == {
        "g2-standard-4": 1,
        "g2-standard-8": 1,
        "g2-standard-12": 1,
        "g2-standard-16": 1,
        "g2-standard-24": 2,
        "g2-standard-32": 1,
        "g2-standard-48": 4,
        "g2-standard-96": 8,
    }


def test_tpu_offers_come_from_the_table() -> None:
    """Slices, zones and flex-start zones a TPU stack is checked against are the table's, not a copy."""
    assert tpu_slices("tpu-v6e") == {"v6e-1": 1, "v6e-4": 4, "v6e-8": 8}
    assert set(flex_start_zones("tpu-v6e")) <= set(zones_of(shape("v6e-1")))
    assert "us-east5-a" in gke_zones("tpu-v6e")


def test_every_fact_names_a_source_and_a_day() -> None:
    """An unsourced figure cannot be re-checked when Google or NVIDIA changes it."""

    def facts(node: object) -> list[dict[str, object]]:
        if isinstance(node, dict):
            found = [node] if "value" in node else []
            for child in node.values():
                found += facts(child)
            return found
        if isinstance(node, list):
            return [fact for child in node for fact in facts(child)]
        return []

    every = facts(_raw())
    assert len(every) > 20
    for fact in every:
        assert isinstance(fact.get("read"), str)
        assert str(fact["source"]).strip()


def test_a_shape_pointing_at_an_unknown_accelerator_is_refused() -> None:
    """A typo in a new entry must fail when the table is read, naming the entry, not at plan time."""
    raw = _raw()
    shapes_block = raw["shapes"]
    assert isinstance(shapes_block, dict)
    shapes_block["l4"] = {**shapes_block["l4"], "accelerator": "nvidia-l5"}
    with pytest.raises(ValidationError, match=r"shapes\.l4\.accelerator 'nvidia-l5'"):
        ShapesTable.model_validate(raw)


def test_unknown_names_list_what_there_is() -> None:
    """A wrong name gets the allowed ones, not a bare KeyError."""
    with pytest.raises(KeyError, match="g2-standard-24"):
        shape("g2-standard-25")
    with pytest.raises(KeyError, match="nvidia-l4"):
        accelerator_facts("nvidia-l5")


def test_the_how_to_add_note_names_every_field_the_table_requires() -> None:
    """The note at the top of shapes.json is what a contributor follows to add a shape: a field the table's
    validator requires but the note leaves out would make its promise ("no Python") fail at the first preview."""
    about = shapes_table().about
    required = (
        *("platform", "accelerator", "deployedSize", "instanceMaximum", "where", "priceKey", "family"),
        *("machineFamilies", "runtimeVersion", "pricing.json", "examples/Pulumi."),
    )
    assert [field for field in required if field not in about] == []


def test_vllms_batched_token_default_follows_the_chip_not_the_tpu_family() -> None:
    """The planner gave every TPU generation v6e's 1024 batched tokens, so a TPU7x estimate assumed a prefill chunk
    vLLM does not use there: vLLM lists v6e by name and gives any chip it does not list the device default by
    memory (192 GiB: 8192), as it does an L4 (2048) or an H100 (8192)."""
    assert accelerator_facts("tpu-v6e").default_batched_tokens == 1024
    assert accelerator_facts("tpu-v7").default_batched_tokens == 8192
    assert accelerator_facts("nvidia-l4").default_batched_tokens == 2048
    assert accelerator_facts("nvidia-h100-80gb").default_batched_tokens == 8192


def test_a_quota_selector_names_exactly_one_quota() -> None:
    """A GKE machine series' quota entry naming both a metric and a quota ID (or neither) would make preflight
    guess which one a node pool draws on: the table refuses it, naming the fields allowed."""
    raw = _raw()
    families = raw["machineFamilies"]
    assert isinstance(families, dict)
    families["ct6e"]["quota"]["spot"] = [{"metric": "compute.googleapis.com/x", "quotaId": "X-per-project-region"}]
    with pytest.raises(ValidationError, match="exactly one of metric, quotaId or displayName"):
        ShapesTable.model_validate(raw)
