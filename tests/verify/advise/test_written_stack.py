"""The written stack carries the answer: the workload the row was ranked for, the autoscaling bounds the load
needs, the cold-start choice, and the command that produced it; it previews once its revision is pinned."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main as preview_main
from preview.stack_file import ROOT_ENVIRONMENT_VARIABLE, read_stack_config
from stacks.loading import load_stack
from tests.conftest import ROOT, ensure_event_loop
from verify.advise.options import AdviseOptions, Slo
from verify.advise.run import run_advise
from verify.cli import main as verify_main

REVISION = "5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "__main__.py", "Pulumi.l4.yaml", "Pulumi.tpu-v6e.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _config(project: Path, name: str) -> dict[str, object]:
    document = yaml.safe_load((project / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
    config = document["config"]
    assert isinstance(config, dict)
    return config


def test_the_written_stack_carries_the_workload_bounds_and_command(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stack advise wrote lost the workload (the preview judged 512-token requests for an 8k workload), wrote
    a fixed GKE fleet, and did not say what produced it: now it carries capacity.requestTokens, an autoscaler
    from the SLO's replicas to the peak's, and the command in its header, and the preview plans it."""
    monkeypatch.setenv(ROOT_ENVIRONMENT_VARIABLE, str(project))
    argv = ["advise", "--prompt-tokens", "8192", "--output-tokens", "512", "--users", "50"]
    argv += ["--slo", "p95_ttft_ms=4000", "--platform", "gke", "--model", "gemma-4-12b-it", "--variant", "bf16"]
    argv += ["--write", "rag", "--revision", REVISION]
    assert verify_main(argv) == 0
    capsys.readouterr()
    text = (project / "Pulumi.rag.yaml").read_text(encoding="utf-8")
    assert "# Written by `gemma-verify advise --prompt-tokens 8192" in text
    assert "--write rag" in text
    config = _config(project, "rag")
    assert config["gemma-serving:capacity"] == {"requestTokens": 8704}
    gke = config["gemma-serving:gke"]
    assert isinstance(gke, dict)
    assert gke["replicas"]["min"] < gke["replicas"]["max"]
    assert gke["nodePool"]["minNodes"] < gke["nodePool"]["maxNodes"]
    stack = read_stack_config(project, "rag")
    assert load_stack(stack.values, root=project).settings.capacity.request_tokens == 8704
    ensure_event_loop()
    assert preview_main(["--stack", "rag", "--root", str(project), "--format", "json"]) == 0


def test_a_cloud_run_stack_says_its_cold_start_choice_and_scales_to_the_peak(project: Path) -> None:
    """A Cloud Run row with minInstances 0 ignored the cold start: the header says what share of requests meet
    one and how to keep them warm, and maxInstances allows the peak."""
    from verify.advise.write import write_stack

    report = run_advise(
        AdviseOptions(
            prompt_tokens=2048,
            output_tokens=256,
            users=20,
            slo=Slo(p95_ttft_ms=4000),
            platforms=("cloud-run",),
            one_ranking=True,
            active_hours_per_month=200,
        )
    )
    row = report.rows[0]
    path = write_stack(project, "chat", row, revision=REVISION)
    text = path.read_text(encoding="utf-8")
    assert "minInstances 0 (scale to zero, as priced)" in text
    assert "meet a cold start" in text
    cloud_run = _config(project, "chat")["gemma-serving:cloudRun"]
    assert isinstance(cloud_run, dict)
    assert cloud_run["maxInstances"] == row.peak_replicas
    assert cloud_run["maxInstances"] > row.replicas
    ensure_event_loop()
    assert preview_main(["--stack", "chat", "--root", str(project), "--format", "json"]) == 0
