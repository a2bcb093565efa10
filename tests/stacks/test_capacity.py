"""Capacity checks on whole stacks: a stack that cannot fit fails at load; one that will queue warns."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from preview.stack_file import read_stack_config
from serving.model_profiles import builtin_profile_files
from stacks.capacity import GPU_RUNTIME_OVERHEAD_GIB_PER_GPU, assess_stack
from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import StackSettings
from tests.conftest import ROOT, render_stack
from tests.preview_cli import SHARES_SHIPPED_PLANS, run_preview, shipped_plan
from tests.stacks.test_settings import long_form

PREFIX = "gemma-serving:"


def load(stack: str, **edits: object) -> StackSettings:
    """A shipped stack file's settings, with top-level keys (`vllm`, `model`, ...) edited."""
    config = read_stack_config(ROOT, stack)
    if "model" in edits:  # the stack written the long way, so an edited path or source is what it serves
        config.values.update(long_form(config.values))
    for key, change in edits.items():
        full = PREFIX + key
        current = json.loads(config.values[full]) if full in config.values else {}
        current.update(change)  # type: ignore[call-overload]
        config.values[full] = json.dumps(current)
    return settings_from_config(config.values, project=config.project)


def load_errors(stack: str, **edits: object) -> list[str]:
    with pytest.raises(StackConfigError) as caught:
        load(stack, **edits)
    return caught.value.problems


def test_bf16_12b_on_l4_fails_at_load_with_the_numbers() -> None:
    """The bf16 12B checkpoint on an L4 fails the preview before any rollout (weights alone fill the card)."""
    # Unset quantization too: the bf16 checkpoint is not compressed-tensors (stacks/checkpoint_format.py).
    problems = load_errors("l4", model={"path": "gemma-4-12B-it"}, vllm={"quantization": None})
    assert len(problems) == 1
    assert problems[0].startswith("gemma-serving:model.path: capacity: weights need 23.90 GB (22.26 GiB)")
    assert "only 21.23 GiB is usable (0.95 x 1 x 22.35 GiB on NVIDIA L4)" in problems[0]


def test_16k_at_64_sequences_on_l4_informs_with_the_numbers() -> None:
    """16K contexts at 64 sequences on an L4: one fits, 64 do not. Normal for chat traffic, so it is an
    INFO with the concurrency, not a WARNING users learn to ignore."""
    capacity = assess_stack(load("l4", vllm={"maxModelLen": 16384, "maxNumSeqs": 64}))
    assert capacity.plan is not None
    assert capacity.errors == []
    assert capacity.warnings == []
    full_length = next(info for info in capacity.infos if "full-length" in info)
    assert f"{capacity.plan.full_length_sequences} full-length (16,384-token) sequences fit" in full_length
    assert "docs/capacity-planning.md" in full_length
    assert 1 <= capacity.plan.full_length_sequences < 64


def test_the_shipped_stacks_print_no_capacity_warning() -> None:
    """Every shipped stack printed a capacity WARNING (headroom -177 GiB on l4) that is normal for chat
    traffic; a warning users learn to ignore hides the one that matters. They fit their stated workload."""
    for stack, at_least in (("l4", 2), ("rtx6000", 20), ("tpu-v6e", 1)):
        capacity = assess_stack(load(stack))
        assert capacity.plan is not None
        assert capacity.errors == []
        assert capacity.plan.full_length_sequences >= at_least
        assert capacity.warnings == []
        assert any(info.startswith("the stated workload fits") for info in capacity.infos)


def test_a_workload_that_does_not_fit_warns_and_says_what_to_do() -> None:
    """The warning that matters: maxNumSeqs requests of the stated size cannot all be resident, so vLLM
    preempts under ordinary traffic. It names the numbers, the fix and the docs."""
    capacity = assess_stack(load("tpu-v6e", capacity={"requestTokens": 512}))
    (warning,) = capacity.warnings
    assert warning.startswith("the stated workload does not fit: --max-num-seqs 64 requests of 512 tokens")
    assert "holds 51 of them" in warning
    assert "Lower --max-num-seqs to 51" in warning
    assert "capacity.requestTokens" in warning
    assert "docs/capacity-planning.md" in warning


@SHARES_SHIPPED_PLANS
def test_the_text_plan_has_no_cryptic_fragments() -> None:
    """ "(sources: FORMAT=json, capacity)" told nobody anything; the section says where to look instead."""
    result = shipped_plan("l4")
    assert result.returncode == 0, result.stderr
    assert "(sources: FORMAT=json, capacity)" not in result.stdout
    assert "how to read this: docs/capacity-planning.md" in result.stdout
    assert "WARNING" not in result.stdout
    assert "Warnings from the program" not in result.stdout


def test_the_mtp_drafter_is_planned_with_the_rtx6000_stack() -> None:
    """The rtx6000 stack's drafter weights count; its KV does not (it reads the target's cache)."""
    plan = assess_stack(load("rtx6000")).plan
    assert plan is not None
    assert plan.inputs.drafter is not None
    assert plan.inputs.drafter.name == "gemma-4-12B-it-assistant"
    assert plan.weight_bytes == plan.inputs.model.weight_bytes + plan.inputs.drafter.weight_bytes


def test_a_context_above_what_the_tpu_stack_holds_fails_at_load() -> None:
    """A TPU v6e-1 stack raised to 32K contexts cannot hold one sequence; the error gives the longest that fits."""
    if not (ROOT / "Pulumi.tpu-v6e.yaml").exists():
        pytest.skip("no TPU stack file yet; test_planner.py covers the TPU arithmetic directly")
    problems = load_errors("tpu-v6e", vllm={"maxModelLen": 32768})
    (problem,) = problems
    assert problem.startswith("gemma-serving:vllm.maxModelLen: capacity: one --max-model-len 32,768 sequence needs")
    assert "The longest sequence that fits is" in problem
    assert "TPU v6e" in problem


def test_the_tpu_stack_fits_one_full_length_sequence() -> None:
    """The shipped TPU stack's context limit is within what one chip holds after bf16 weights."""
    if not (ROOT / "Pulumi.tpu-v6e.yaml").exists():
        pytest.skip("no TPU stack file yet")
    capacity = assess_stack(load("tpu-v6e"))
    assert capacity.plan is not None
    assert capacity.errors == []
    assert capacity.plan.max_concurrency >= 1


def test_an_unknown_checkpoint_is_refused_with_how_to_make_it_judgeable() -> None:
    """A GPU stack serving a checkpoint nobody can size is refused (it used to plan with "capacity not checked"),
    and the message says what would make it judgeable."""
    problems = load_errors("l4", model={"path": "my-own-finetune", "source": None})
    assert len(problems) == 1
    assert problems[0].startswith(
        "gemma-serving:capacity.profile: the planner cannot judge whether this stack fits ('my-own-finetune' is "
        "neither a catalog checkpoint nor a built-in profile"
    )
    assert "serve a catalog model (model.id, model.variant, model.revision" in problems[0]
    assert "capacity.weightBytes (or capacity.parameters and capacity.bitsPerParameter)" in problems[0]


def test_weight_bytes_next_to_a_built_in_profile_is_refused() -> None:
    """capacity.weightBytes beside a catalog checkpoint used to be ignored silently (and the 31B then "fit" an L4)."""
    problems = load_errors("l4", capacity={"weightBytes": 1_000_000})
    assert problems == [
        (
            "gemma-serving:capacity.weightBytes: applies only to a checkpoint profiled from its config.json "
            "(capacity.profile: path/to/config.json); this stack's checkpoint has a built-in profile whose weights "
            "are known, so the figure would be ignored: remove it (or correct the catalog with its source)"
        )
    ]


def test_the_program_warns_through_pulumi_log() -> None:
    """`pulumi preview`/`up` show the capacity warning: the program logs it as a Pulumi warning."""
    capture = render_stack("tpu-v6e", {"gemma-serving:capacity": json.dumps({"requestTokens": 512})})
    warnings = [message for severity, message in capture.logs if severity == "warning"]
    assert any(message.startswith("capacity: the stated workload does not fit") for message in warnings)
    quiet = render_stack("l4")
    assert [message for severity, message in quiet.logs if severity == "warning"] == []


def test_json_summary_carries_the_table() -> None:
    """The `capacity` document has the table's figures and the assumptions behind them."""
    document = json.loads(json.dumps(assess_stack(load("l4")).as_dict()))
    for key in ("weightBytes", "kvBytesPerToken", "capacityTokens", "maxConcurrency", "headroomBytes"):
        assert key in document
    assert document["checked"] is True
    assert any("in-flight tokens" in assumption for assumption in document["assumptions"])
    assert document["estimates"]


def test_a_stack_can_point_at_another_checkpoints_config_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint without a built-in profile is planned from its own config.json and index (in the project: the
    folder `pulumi up` runs the program in)."""
    config = builtin_profile_files()["calibration-tiny-gemma4"].config
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 5 * 10**9}}))
    monkeypatch.chdir(tmp_path)
    pointed: dict[str, object] = {
        "model": {"path": "my-own-finetune"},
        "capacity": {"profile": str(tmp_path / "config.json")},
    }
    # Its config.json says 4,096 positions: the stack's 32K context is refused with that number...
    (problem,) = load_errors("l4", **pointed)
    assert "max_position_embeddings 4,096" in problem
    # ...and at 4K it is planned from that config and the index's total_size.
    settings = load("l4", **pointed, vllm={"maxModelLen": 4096})
    plan = assess_stack(settings).plan
    assert plan is not None
    assert plan.weight_bytes == 5 * 10**9
    assert plan.inputs.model.name == tmp_path.name


def _profile_problem(root: Path, profile: str) -> str:
    """The one problem of the l4 stack planned from `profile`, with `root` as the project folder."""
    config = read_stack_config(ROOT, "l4").values
    config.update(long_form(config))
    model = json.loads(config[PREFIX + "model"])
    config[PREFIX + "model"] = json.dumps({**model, "path": "my-own-finetune"})
    config[PREFIX + "capacity"] = json.dumps({"profile": profile})
    with pytest.raises(StackConfigError) as caught:
        settings_from_config(config, root=root)
    (problem,) = caught.value.problems
    return problem


def test_a_capacity_profile_outside_the_project_is_refused_unread(tmp_path: Path) -> None:
    """A JSON file outside the project had one of its values echoed in the error (issue 46): a stack file may name
    only the project's own files, and the refusal quotes nothing of the file."""
    project, outside = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    outside.mkdir()
    (outside / "credentials.json").write_text(json.dumps({"num_hidden_layers": "hunter2-secret-token"}))
    (project / "linked.json").symlink_to(outside / "credentials.json")

    for named in (str(outside / "credentials.json"), "../home/credentials.json", "linked.json"):
        problem = _profile_problem(project, named)
        assert problem.startswith(f"{PREFIX}capacity.profile: {named!r} is outside the project folder ({project})")
        assert "hunter2" not in problem


def test_a_bad_field_of_a_project_config_json_is_named_not_quoted(tmp_path: Path) -> None:
    """Even inside the project, the error names the field and what it must be, never the value found there."""
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": "hunter2-secret-token"}))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 10**9}}))
    problem = _profile_problem(tmp_path, "config.json")
    assert "'num_hidden_layers' must be a non-negative integer, got a string" in problem
    assert "hunter2" not in problem


def test_a_huge_or_special_config_json_is_refused_by_its_size_or_type(tmp_path: Path) -> None:
    """A 3 GB config.json gave MemoryError, a FIFO would hang the plan: both are refused before reading."""
    huge = tmp_path / "huge" / "config.json"
    huge.parent.mkdir()
    with huge.open("wb") as sparse:  # 3 GB that take no disk
        sparse.truncate(3 * 10**9)
    assert "larger than 1 MiB, the most read from such a file" in _profile_problem(tmp_path, "huge/config.json")
    fifo = tmp_path / "fifo" / "config.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert "not a regular file (a FIFO)" in _profile_problem(tmp_path, "fifo/config.json")


def test_a_capacity_profile_that_does_not_exist_names_the_key() -> None:
    """A typo in capacity.profile fails at load with the key and the built-in names."""
    (problem,) = load_errors("l4", capacity={"profile": "gemma-4-12b-typo"})
    assert problem.startswith("gemma-serving:capacity.profile: 'gemma-4-12b-typo' is neither a built-in profile")
    assert "gemma-4-12B-it-qat-w4a16-ct" in problem


@SHARES_SHIPPED_PLANS
def test_preview_prints_the_capacity_table_and_json_key() -> None:
    """`make preview STACK=l4` shows the planner's table; FORMAT=json carries it under "capacity"."""
    text = shipped_plan("l4")
    assert text.returncode == 0, text.stderr
    assert "Capacity (will it fit?):" in text.stdout
    for label in ("weights", "KV per token", "capacity", "concurrency", "headroom"):
        assert f"  {label}" in text.stdout
    assert "INFO: 2 full-length (32,768-token) sequences fit" in text.stdout
    document = json.loads(shipped_plan("l4", "json").stdout)
    assert document["capacity"]["checked"] is True
    assert document["capacity"]["maxModelLen"] == 32768
    assert document["capacity"]["warnings"] == []
    assert document["capacity"]["workloadTokens"] == 512
    assert document["capacity"]["workloadConcurrency"] >= 64
    assert document["capacity"]["infos"]


def test_preview_of_a_stack_that_cannot_fit_exits_with_the_message(tmp_path: Path) -> None:
    """The bf16 12B on the L4 stack: the preview prints the capacity error and exits 1, no traceback."""
    document = yaml.safe_load((ROOT / "Pulumi.l4.yaml").read_text())
    document["config"]["gemma-serving:model"]["variant"] = "bf16"
    # The bf16 repo's own commit (the catalog's pin): the QAT commit on it is refused first (stacks/revisions.py).
    document["config"]["gemma-serving:model"]["revision"] = "707f0a3b8a3c7ad586ed01e27eafbad8a27dd0f7"
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "Pulumi.l4.yaml").write_text(yaml.safe_dump(document))
    result = run_preview("--stack", "l4", "--root", str(tmp_path))
    assert result.returncode == 1
    assert "model.variant: capacity: weights need 23.90 GB" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_tensor_parallel_gpu_group_keeps_runtime_overhead_on_every_gpu() -> None:
    """gke-l4x4 planned 2 GiB of overhead for 4 L4s while v6e-8 planned 8 for 8 chips: a KV budget ~30% too big."""
    stack = load("gke-l4x4")
    plan = assess_stack(stack).plan
    assert plan is not None
    assert stack.vllm.tensor_parallel_size == 4
    assert plan.inputs.runtime_overhead_bytes == 4 * GPU_RUNTIME_OVERHEAD_GIB_PER_GPU * 2**30
    overridden = assess_stack(load("gke-l4x4", capacity={"runtimeOverheadGib": 1.5})).plan
    assert overridden is not None
    assert overridden.inputs.runtime_overhead_bytes == 4 * 1.5 * 2**30


def test_the_31b_nvfp4_on_two_l4s_plans_with_a_price_and_an_unconfirmed_speed() -> None:
    """Write-up E's configuration (31B NVFP4, TP 2 on two L4s, max-model-len 4096) used to be refused as
    'needs Blackwell'; it plans on a g2-standard-24 with its capacity, its price and the speed marked unconfirmed."""
    stack = load("gke-l4x2-31b-nvfp4")
    capacity = assess_stack(stack)
    assert capacity.plan is not None
    assert not capacity.errors
    assert (stack.vllm.tensor_parallel_size, stack.vllm.max_model_len) == (2, 4096)
    assert capacity.plan.capacity_tokens >= 4096
    assert any("speed unconfirmed" in warning for warning in capacity.warnings)
    assert stack.billing().hourly_price().usd_per_hour is not None
