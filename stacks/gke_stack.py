"""A fleet on GKE (a `gke` block): nodes of one accelerator shape, GPU or TPU, and its cross-block checks.

Why a module of its own: the fleet's rules (stacks/gke_rules.py) and what it derives (replicas per node, pod
sizes, the APIs of its gateway) belong to this variant alone; the union in stacks/settings.py picks it when a
stack has a `gke` block.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import model_validator

from serving.image_digests import pinned_reference
from serving.images import CUDA_IMAGE
from serving.pricing import GkeBilling
from serving.route_guard import GuardConfig
from serving.shapes import Accelerator, accelerator_facts
from serving.vllm_args import with_tensor_parallel
from stacks.apis import BASE_APIS, GKE_APIS, GKE_GATEWAY_APIS
from stacks.capacity import PlatformCapacity, gke_capacity
from stacks.gke import GkeSettings
from stacks.gke_rules import gke_stack_problems
from stacks.image_family import CUDA_BUILD, TPU_BUILD, ImageBuild
from stacks.model_load import FuseLoad
from stacks.stack_base import StackBase, refuse_foreign_block


class GkeStack(StackBase):
    """A fleet on GKE: nodes of one accelerator shape (GPU or TPU), one vLLM replica per node (a `gke` block)."""

    PLATFORM: ClassVar[str] = "gke"

    # Any accelerator a GKE machine type of the shapes table carries (stacks/gke_rules.py checks the pair).
    accelerator: Accelerator
    gke: GkeSettings

    @model_validator(mode="before")
    @classmethod
    def _gke_blocks(cls, data: Any) -> Any:  # noqa: ANN401 - raw stack data
        for key in ("cloudRun", "tpu", "bench"):
            refuse_foreign_block(data, key, f"{key}: a GKE stack takes a gke block instead; remove {key}")
        return data

    @model_validator(mode="after")
    def _no_kept_cache(self) -> Self:
        if self.compile_cache.keep:
            raise ValueError(
                "compileCache.keep: not wired for GKE fleets yet (their pods would need a read-write Cloud Storage "
                "FUSE volume on the cache folder, or GKE Inference Quickstart's xla_cache_bucket_uri on TPU); "
                "it is kept on Cloud Run and TPU stacks (docs/cold-start.md)"
            )
        return self

    @model_validator(mode="after")
    def _reads_through_fuse(self) -> Self:
        load = self.model.load
        if not isinstance(load, FuseLoad) or load.parallel_downloads:
            raise ValueError(
                "model.load: a GKE fleet reads the bucket through the Cloud Storage FUSE CSI driver (gke.mount); "
                "stream and parallelDownloads are wired for Cloud Run stacks only; use model.load: fuse"
            )
        return self

    @model_validator(mode="after")
    def _fits_the_fleet(self) -> Self:
        problems = gke_stack_problems(self, self.gke.node_pool.shape)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def image_build(self) -> ImageBuild:
        """The image family of the stack's accelerator's family (the machine type's accelerator is checked
        against it by gke_stack_problems, which runs after the image check)."""
        return TPU_BUILD if accelerator_facts(self.accelerator).family == "tpu" else CUDA_BUILD

    def _adapter_platform_problem(self) -> str | None:
        if accelerator_facts(self.accelerator).family == "tpu":
            return (
                "adapters: LoRA on vllm-tpu is not confirmed for Gemma 4, so a GKE TPU fleet serves none; serve "
                "adapters on a GKE GPU fleet or a Cloud Run GPU stack (docs/adapters.md)"
            )
        return None

    @property
    def mount_options(self) -> tuple[str, ...]:
        """The pods' gcsfuse options; with adapters, implicit-dirs (vLLM's resolver needs adapters/<name>/ as
        directories, and the imported objects carry no folder placeholders)."""
        options = tuple(self.gke.mount.mount_options())
        if self.adapters and "implicit-dirs" not in options:
            options = (*options, "implicit-dirs")
        return options

    @property
    def replicas_per_node(self) -> int:
        """vLLM replicas sharing one node: a GPU node's accelerators over the tensor-parallel size when it
        divides them (two TP-2 replicas on a 4-GPU node), else 1. TPU slices keep one replica per node."""
        shape = self.gke.node_pool.shape
        tensor_parallel = self.vllm.tensor_parallel_size
        if shape.is_tpu or shape.chips % tensor_parallel:
            return 1
        return shape.chips // tensor_parallel

    @property
    def accelerator_chips(self) -> int:
        """Accelerators one replica serves over."""
        return self.gke.node_pool.shape.chips // self.replicas_per_node

    @property
    def pod_cpu(self) -> float:
        return self.gke.pod_cpu(self.replicas_per_node)

    @property
    def pod_memory_gib(self) -> float:
        return self.gke.pod_memory_gib(self.replicas_per_node)

    @property
    def import_image(self) -> str:
        """The import job's base image: the CUDA vLLM image carries the clients (the TPU one has no twin)."""
        return self.model_import.image or pinned_reference(CUDA_IMAGE)

    @property
    def apis(self) -> tuple[str, ...]:
        gateway = GKE_GATEWAY_APIS if self.gke.uses_gateway else ()
        return tuple(sorted({*BASE_APIS, *GKE_APIS, *gateway, *self.monitoring.apis}))

    @property
    def zone(self) -> str | None:
        """The fleet spans gke.nodePool.zones: no single zone to name."""
        return None

    @property
    def port(self) -> int:
        return self.gke.port

    def guard_config(self) -> GuardConfig:
        """GKE: the key on every served route but /health; /metrics without it only from outside the client
        ranges, where the NetworkPolicy admits Managed Prometheus and the endpoint pickers alone."""
        return GuardConfig(
            names=self.answered_names(),
            key="required",
            scrapers="network",
            clients=self.gke.client_ranges,
            adapters_dir=self.adapters_dir,
            versioned=bool(self.adapters),
        )

    @property
    def model_root(self) -> str:
        return self.gke.mount.mount_path

    def serve_args(self) -> list[str]:
        """The container's `vllm serve` arguments, tensor parallel over the node's accelerators always stated."""
        args = self._vllm_serve_args(port=self.port, model_root=self.model_root)
        return with_tensor_parallel(args, self.vllm.tensor_parallel_size)

    def capacity_platform(self) -> PlatformCapacity:
        return gke_capacity(self.gke.node_pool.shape, self.vllm, self.capacity)

    def quota_warnings(self) -> list[str]:
        """Accelerator quota shows in the plan's notes (per node pool) and in `verify preflight`."""
        return []

    def _nodes_for(self, replicas: int) -> int:
        """Nodes that `replicas` vLLM replicas fill, packed replicas_per_node to a node."""
        return -(-replicas // self.replicas_per_node)

    def billing(self) -> GkeBilling:
        """What each node bills and how many run (min, max), plus the cluster fee: the `billing` output."""
        pool = self.gke.node_pool
        return GkeBilling(
            machine_type=pool.machine_type,
            accelerator=self.accelerator,
            accelerators_per_node=pool.shape.chips,
            provisioning_model=pool.provisioning.value,
            region=self.region,
            min_nodes=0 if self.gke.replicas.parked else max(pool.min_nodes, self._nodes_for(self.gke.replicas.min)),
            max_nodes=0 if self.gke.replicas.parked else self._nodes_for(self.gke.replicas.max),
            cluster_created=self.gke.cluster.existing is None,
            system_machine_type=self.gke.cluster.system_machine_type if self.gke.cluster.existing is None else None,
            system_nodes=len(pool.zones),
        )
