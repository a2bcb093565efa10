"""The offline plan of a TPU stack with placements, as `make preview` prints it (a child process)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import ROOT
from tests.preview_cli import run_preview, stack_root_with

EXAMPLE = ROOT / "examples" / "Pulumi.tpu-v6e-fallback.yaml"


def test_two_placements_preview_with_both_zones_and_the_worst_case_price(tmp_path: Path) -> None:
    """The example's plan names both zones, the quota each needs, a NAT in each region, and the dearest price."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    plan = run_preview("--stack", "tpu-v6e-fallback", root=tmp_path)
    assert plan.returncode == 0, plan.stderr
    text = plan.stdout
    assert "1. us-east5-a flex-start, max run duration 14400s" in text
    assert "2. europe-west4-a spot (preemptible at any time" in text
    assert "2. europe-west4-a spot: preemptible TPU v6e quota in europe-west4-a" in text
    assert "gemma-tpu-v6e-fallback-vllm-nat-europe-west4" in text
    assert "basis:         TPU v6e-1 (1 chip(s)), spot, europe-west4" in text
    assert "1. us-east5-a flex-start $1.35/h; 2. europe-west4-a spot $1.78/h; priced above: the worst case" in text


def test_flex_start_outside_the_table_previews_with_a_warning(tmp_path: Path) -> None:
    """Flex-start in us-east5-b (not in Google's published list) is planned, with the warning to check it live."""
    tpu = yaml.safe_load((ROOT / "Pulumi.tpu-v6e.yaml").read_text())["config"]["gemma-serving:tpu"]
    root = stack_root_with(tmp_path, "tpu-v6e", {"gemma-serving:tpu": {**tpu, "zone": "us-east5-b"}})
    plan = run_preview("--stack", "tpu-v6e", root=root)
    assert plan.returncode == 0, plan.stderr
    assert "tpu.zone: flex-start in us-east5-b is not in Google's published flex-start zones" in plan.stdout
    assert "gemma-tpu-v6e-vllm in us-east5-b" in plan.stdout
