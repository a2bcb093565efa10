"""The serving container's port and model folder: one home (serving/container.py), read by everyone.

Why it matters to a user: the stack settings, the components' Args (usable without a stack file), the TPU
start-up script and the policy pack's firewall rule each restated 8000 and /mnt/models; changing one and
not the others would serve on a port the firewall rule does not guard, or look for weights where none are.
"""

from __future__ import annotations

import dataclasses
import io
import json
import tokenize
from importlib import resources
from pathlib import Path

from components.tpu.node import NodeWeights, TpuVllmNodeArgs
from components.tpu.startup_script import StartupScriptSpec
from components.vllm_gpu_service import ModelMount, VllmGpuServiceArgs
from policy.network import DEFAULT_VLLM_PORTS
from serving.cloud_run_rules import request_concurrency
from serving.container import MODEL_ROOT, VLLM_PORT
from stacks.cloud_run import CloudRunSettings, GcsMountSettings
from stacks.gke import GkeSettings
from stacks.tpu import TpuSettings
from tests.conftest import ROOT

# The packages of the program and of its readers; tests may pin the literal user-facing values. The policy
# pack imports nothing of the project, so it keeps its own default (checked against ours below).
PACKAGES = ("stacks", "deploy", "components", "serving", "verify", "gemma_mcp", "preview", "job_scripts")


def test_the_port_is_the_one_vllm_listens_on_when_not_told() -> None:
    """A container started without --port listens on vLLM's default; the stacks' default must be that one."""
    flags = json.loads(resources.files("serving.data").joinpath("vllm-0.32-serve-flags.json").read_text())
    (port,) = [entry for entry in flags["args"] if entry.get("flags") == ["--port"]]
    assert VLLM_PORT == port["default"] == 8000


def test_every_default_reads_the_one_home() -> None:
    """Settings, component Args and the policy pack agree on the port and the model folder."""
    fields = (CloudRunSettings.model_fields, TpuSettings.model_fields, GkeSettings.model_fields)
    assert {model["port"].default for model in fields} == {VLLM_PORT}
    assert GcsMountSettings().mount_path == ModelMount().mount_path == MODEL_ROOT
    assert _default(VllmGpuServiceArgs, "port") == VLLM_PORT
    assert _default(TpuVllmNodeArgs, "port") == VLLM_PORT
    assert _default(NodeWeights, "root") == MODEL_ROOT
    assert _default(StartupScriptSpec, "model_root") == MODEL_ROOT
    assert DEFAULT_VLLM_PORTS == (VLLM_PORT,)


def test_no_module_restates_the_port_or_the_model_folder() -> None:
    """Only serving/container.py writes 8000 or "/mnt/models" as a value (comments and prose aside)."""
    restated = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "serving" / "container.py":
                continue
            restated += [f"{path.relative_to(ROOT)}:{line}" for line in _literal_lines(path)]
    assert restated == []


def test_cloud_run_concurrency_follows_the_batch_unless_set() -> None:
    """Unset, an instance admits what vLLM batches (maxNumSeqs); a stated concurrency wins."""
    assert request_concurrency(None, max_num_seqs=48) == 48
    assert request_concurrency(96, max_num_seqs=48) == 96


def _default(args: type, name: str) -> object:
    return next(field.default for field in dataclasses.fields(args) if field.name == name)


def _literal_lines(path: Path) -> list[int]:
    """Lines where the port or the folder is a value: a number token 8000, or a string that is the folder."""
    source = path.read_text(encoding="utf-8")
    if str(VLLM_PORT) not in source and MODEL_ROOT not in source:
        return []  # neither can be a token of it (tokenizing every module cost about a second of CPU)
    lines = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NUMBER and token.string == str(VLLM_PORT):
            lines.append(token.start[0])
        if token.type == tokenize.STRING and token.string.strip("\"'") == MODEL_ROOT:
            lines.append(token.start[0])
    return lines
