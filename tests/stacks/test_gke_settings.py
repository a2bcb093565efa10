"""A GKE stack file is checked at load, each mistake named by its key (stacks/gke.py, stacks/gke_rules.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from preview.notes import manual_steps
from serving.gke_machines import allocatable_memory_gib, allocatable_vcpu
from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import GkeStack
from tests.conftest import render_stack, stack_config

TPU = "gke-tpu-v6e"
GPU = "gke-l4x4"


def _load(stack: str, **gke_changes: Any) -> GkeStack:
    values = dict(stack_config(stack).values)
    gke = json.loads(values["gemma-serving:gke"])
    for dotted, value in gke_changes.items():
        block = gke
        *path, last = dotted.split("__")
        for key in path:
            block = block.setdefault(key, {})
        block[last] = value
    values["gemma-serving:gke"] = json.dumps(gke)
    settings = settings_from_config(values)
    assert isinstance(settings, GkeStack)
    return settings


def _problems(stack: str, overrides: dict[str, str] | None = None, **gke_changes: Any) -> str:
    values = dict(stack_config(stack).values)
    values.update(overrides or {})

    def load() -> object:
        return _load(stack, **gke_changes) if not overrides else settings_from_config(values)

    with pytest.raises(StackConfigError) as error:
        load()
    return str(error.value)


def test_both_shipped_gke_stacks_load_as_fleets() -> None:
    """The examples must load as the GKE variant, TP equal to accelerators per node."""
    tpu, gpu = _load(TPU), _load(GPU)
    assert (tpu.gke.node_pool.shape.chips, tpu.vllm.tensor_parallel_size) == (1, 1)
    assert (gpu.gke.node_pool.shape.chips, gpu.vllm.tensor_parallel_size) == (4, 4)
    assert "--tensor-parallel-size" in gpu.serve_args()


def test_a_machine_type_of_another_accelerator_is_refused() -> None:
    """A TPU stack with a G2 machine would never schedule: the key and the allowed types are named."""
    message = _problems(TPU, nodePool__machineType="g2-standard-48")
    assert "gke.nodePool.machineType g2-standard-48 carries nvidia-l4" in message
    assert "ct6e-standard-1t" in message


def test_an_accelerator_count_the_machine_does_not_have_is_refused() -> None:
    """G2 machines come with a fixed number of GPUs; asking for another count fails at load."""
    assert "comes with exactly 4" in _problems(GPU, nodePool__acceleratorCount=2)


def test_tensor_parallel_must_divide_the_nodes_accelerators() -> None:
    """TP 3 on a 4-GPU node would leave a GPU no replica can use; the divisors are named."""
    values = dict(stack_config(GPU).values)
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm["tensorParallelSize"] = 3
    message = _problems(GPU, {"gemma-serving:vllm": json.dumps(vllm)})
    assert "vllm.tensorParallelSize 3" in message
    assert "set it to 4 or a divisor of it" in message
    assert "1, 2, 4" in message


def _packed(machine_type: str = "g2-standard-48", tensor_parallel: int = 2, **gke: Any) -> dict[str, str]:
    """The GPU example as write-up E ran it: the 31B in NVFP4 at TP 2, here two replicas on one 4-GPU node."""
    values = dict(stack_config(GPU).values)
    # The checkpoint by its bucket path (no commit of it is pinned offline): the catalog knows it by that name.
    values["gemma-serving:model"] = json.dumps({"path": "gemma-4-31B-it-NVFP4", "servedName": "gemma-4-31b-it"})
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm.update(tensorParallelSize=tensor_parallel, maxModelLen=4096, dtype="auto", kvCacheDtype="fp8")
    values["gemma-serving:vllm"] = json.dumps(vllm)
    block = json.loads(values["gemma-serving:gke"])
    block["nodePool"]["machineType"] = machine_type
    for key, value in gke.items():
        block[key] = value
    values["gemma-serving:gke"] = json.dumps(block)
    return values


def test_two_tensor_parallel_2_replicas_share_a_four_gpu_node() -> None:
    """Write-up E ran TP 2 on two of a 4-GPU box's L4s; on GKE the node holds two such replicas: each pod
    requests 2 GPUs and half the node's CPU and memory, the nodes billed are replicas / 2, the HPA counts pods."""
    settings = settings_from_config(_packed(replicas={"min": 2, "max": 4}))
    assert isinstance(settings, GkeStack)
    assert (settings.replicas_per_node, settings.accelerator_chips) == (2, 2)
    billed = settings.billing()
    assert (billed.min_nodes, billed.max_nodes) == (1, 2)
    shape = settings.gke.node_pool.shape
    assert settings.pod_memory_gib == float(int(allocatable_memory_gib(shape) * 0.8 / 2))
    assert settings.pod_cpu == round(allocatable_vcpu(shape) * 0.8 / 2, 1)


def test_packed_replicas_past_the_nodes_are_refused() -> None:
    """Two replicas per node and maxNodes 2 hold four replicas; a fifth would stay Pending."""
    with pytest.raises(StackConfigError, match=r"gke\.replicas\.max 5 exceeds 2 x gke\.nodePool\.maxNodes 2"):
        settings_from_config(_packed(replicas={"min": 1, "max": 5}))


def test_the_deployment_requests_the_replicas_gpus_not_the_nodes() -> None:
    """A pod requesting all 4 GPUs of the node would leave no room for the second replica."""
    packed = _packed()
    capture = render_stack(
        GPU, {key: packed[key] for key in ("gemma-serving:model", "gemma-serving:vllm", "gemma-serving:gke")}
    )
    containers = [
        container
        for deployment in capture.of_type("kubernetes:apps/v1:Deployment")
        for container in deployment.inputs["spec"]["template"]["spec"]["containers"]
        if container["name"] == "vllm"
    ]
    (container,) = containers
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert "--tensor-parallel-size" in container["args"]


def test_the_tensor_parallel_hint_names_only_machine_types_that_have_that_many() -> None:
    """The hint listed every G2 type as if each had the GPUs asked for; only g2-standard-96 has 8 L4s."""
    values = dict(stack_config(GPU).values)
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm["tensorParallelSize"] = 8
    message = _problems(GPU, {"gemma-serving:vllm": json.dumps(vllm)})
    assert "pick a machine type with 8 (g2-standard-96)" in message
    vllm["tensorParallelSize"] = 3
    message = _problems(GPU, {"gemma-serving:vllm": json.dumps(vllm)})
    assert "tensor parallel size a machine type has (1, 2, 4, 8)" in message
    assert "g2-standard-4," not in message


def test_a_zone_without_the_accelerator_is_refused() -> None:
    """A node pool in a zone without v6e waits forever; the zones that have it are listed."""
    message = _problems(TPU, nodePool__zones=["us-east5-c"])
    assert "gke.nodePool.zones: us-east5-c does not offer tpu-v6e" in message


def test_zones_outside_the_stack_region_are_refused() -> None:
    """The bucket and the mirror live in the stack's region; nodes elsewhere pay egress and latency."""
    assert "must be the region of gke.nodePool.zones" in _problems(TPU, nodePool__zones=["us-central1-b"])


def test_more_replicas_than_nodes_is_refused() -> None:
    """One replica per node: an HPA allowed more replicas than nodes leaves pods Pending forever."""
    message = _problems(TPU, replicas__max=8)
    assert "gke.replicas.max 8 exceeds gke.nodePool.maxNodes 4" in message


def test_weights_larger_than_the_pod_memory_are_refused() -> None:
    """The checkpoint passes through host memory while loading; a pod smaller than it is OOM-killed."""
    message = _problems(TPU, memoryGib=16)
    assert "gke.memoryGib" in message
    assert "22.3 GiB of weights" in message


def test_memory_beyond_what_the_node_allocates_is_refused() -> None:
    """A pod asking more than the node can allocate never schedules."""
    assert "can allocate" in _problems(GPU, memoryGib=500)


def test_a_public_service_needs_narrow_ranges() -> None:
    """Never the vLLM port open to the internet, in any combination of ranges."""
    assert "allowedSourceRanges" in _problems(TPU, service__publicEndpoint=True)
    message = _problems(TPU, service__publicEndpoint=True, service__allowedSourceRanges=["0.0.0.0/1", "128.0.0.0/1"])
    assert "together let in" in message
    fine = _load(TPU, service__publicEndpoint=True, service__allowedSourceRanges=["203.0.113.0/24"])
    assert fine.gke.service.allowed_source_ranges == ("203.0.113.0/24",)


def test_an_unpinnable_kubernetes_version_is_refused() -> None:
    """The manifests are validated against the pinned version's schema: only versions the tests know."""
    assert "kubernetesVersion '1.29'" in _problems(TPU, cluster__kubernetesVersion="1.29")


def test_an_existing_cluster_needs_its_location() -> None:
    """A bare cluster name is ambiguous across locations."""
    assert "gke.cluster.location" in _problems(TPU, cluster__existing="serving")
    settings = _load(TPU, cluster__existing="projects/p/locations/us-east5/clusters/serving")
    assert (settings.gke.cluster.existing_name, settings.gke.cluster_location) == ("serving", "us-east5")
    assert settings.billing().cluster_created is False


def test_an_existing_cluster_renders_without_creating_one() -> None:
    """A stack naming an existing cluster creates no cluster or system pool, only the accelerator pool and the
    workload on it, and the plan's notes say what the cluster must have."""
    gke = json.loads(stack_config(TPU).values["gemma-serving:gke"])
    gke["cluster"] = {"existing": "serving", "location": "us-east5"}
    capture = render_stack(TPU, {"gemma-serving:gke": json.dumps(gke)})
    assert capture.of_type("gcp:container/cluster:Cluster") == []
    pools = capture.of_type("gcp:container/nodePool:NodePool")
    assert [pool.inputs["cluster"] for pool in pools] == ["serving"]
    assert capture.of_type("kubernetes:apps/v1:Deployment")
    assert any(note.startswith("cluster: the stack uses an existing cluster") for note in manual_steps(capture))


def test_a_tpu_image_on_gpu_nodes_is_refused() -> None:
    """The image family follows the node pool, not the platform."""
    message = _problems(GPU, {"gemma-serving:image": "vllm/vllm-tpu:v0.32.0"})
    assert "image" in message


def test_a_credential_in_the_env_is_refused() -> None:
    """A manifest's env is readable by anyone who may read the Deployment: no secret-named values there."""
    assert "gke.env: 'HF_TOKEN' looks like a credential" in _problems(GPU, env={"HF_TOKEN": "x"})


def test_a_typo_in_the_gke_block_names_the_key() -> None:
    """A typo is an error naming the key, never a silent default."""
    assert "gemma-serving:gke.nodePool.maxNode" in _problems(TPU, nodePool__maxNode=3)


def test_a_parked_fleet_costs_no_accelerator_node() -> None:
    """Parking sets the Deployment to 0 replicas; the plan prices 0 nodes at min and max."""
    bill = _load(TPU, replicas__parked=True).billing()
    assert (bill.min_nodes, bill.max_nodes) == (0, 0)


def test_the_31b_needs_all_four_gpus_of_the_node() -> None:
    """The GPU example serves Gemma 4 31B because it needs tensor parallel 4: on a 2-GPU node its 58 GiB of
    bf16 weights do not fit (the planner, with the catalog's weights, refuses it at load)."""
    values = dict(stack_config(GPU).values)
    vllm = json.loads(values["gemma-serving:vllm"])
    vllm["tensorParallelSize"] = 2
    gke = json.loads(values["gemma-serving:gke"])
    gke["nodePool"]["machineType"] = "g2-standard-24"
    message = _problems(GPU, {"gemma-serving:vllm": json.dumps(vllm), "gemma-serving:gke": json.dumps(gke)})
    assert "model.path: capacity:" in message
    assert "58.20 GiB" in message


def test_a_serving_track_without_the_gate_is_refused() -> None:
    """`servingTrack` on a direct fleet would do nothing (one Deployment): the key and its condition are named."""
    message = _problems(GPU, rollout__servingTrack="green")
    assert "gke.rollout.servingTrack applies only with gke.rollout.gated: true" in message


def test_a_gated_fleet_names_the_other_track_as_the_candidate() -> None:
    """A template change lands on the track users do not reach, whichever that is."""
    assert _load(GPU, rollout__gated=True).gke.rollout.candidate_track == "green"
    assert _load(GPU, rollout__gated=True, rollout__servingTrack="green").gke.rollout.candidate_track == "blue"
    assert "gke.rollout.servingTrack" in _problems(GPU, rollout__gated=True, rollout__servingTrack="red")


@pytest.mark.parametrize(
    "machine_type",
    ["e2-micro; rm -rf /", "e2-standard-4 --metadata=x", "g2-standard-4", "E2-STANDARD-4", "e2-standard-"],
)
def test_a_system_machine_type_that_is_not_a_cpu_machine_type_is_refused(machine_type: str) -> None:
    """`gke.cluster.systemMachineType: "e2-micro; rm -rf /"` previewed and reached the node pool unchecked; a GPU
    machine type would put an accelerator under kube-dns. Refused naming the key and the allowed forms."""
    values = dict(stack_config("gke-l4x4").values)
    gke = json.loads(values["gemma-serving:gke"])
    gke.setdefault("cluster", {})["systemMachineType"] = machine_type
    values["gemma-serving:gke"] = json.dumps(gke)
    with pytest.raises(StackConfigError) as raised:
        settings_from_config(values)
    (problem,) = raised.value.problems
    assert problem.startswith(f"gemma-serving:gke.cluster.systemMachineType: {machine_type!r} is not a predefined")
    assert "family one of e2, n1, n2" in problem
    assert "or e2-micro, e2-small, e2-medium (e.g. e2-standard-4, the default)" in problem


@pytest.mark.parametrize(
    "machine_type", ["e2-standard-4", "e2-medium", "n2-highmem-8", "c3-standard-4-lssd", "t2d-standard-1"]
)
def test_a_cpu_machine_type_for_the_system_pool_is_accepted(machine_type: str) -> None:
    """The check refuses names, not real CPU machine types of the families Compute Engine offers."""
    values = dict(stack_config("gke-l4x4").values)
    gke = json.loads(values["gemma-serving:gke"])
    gke.setdefault("cluster", {})["systemMachineType"] = machine_type
    values["gemma-serving:gke"] = json.dumps(gke)
    settings = settings_from_config(values)
    assert isinstance(settings, GkeStack)
    assert settings.gke.cluster.system_machine_type == machine_type
