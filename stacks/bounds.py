"""Upper bounds of the stack file's numbers that no platform limit elsewhere bounds first.

Why: a number nothing bounds reaches arithmetic that cannot hold it (`capacity.runtimeOverheadGib: 1e308`
became infinity and an OverflowError traceback, issue 46) or an API that refuses it only at `pulumi up` (a
budget above the Budget API's int64). Each bound is either a platform's own limit (cited) or far beyond
anything a real stack holds, so that only a typo meets it; the platform checks with their own messages
(Cloud Run's instance limits, the node's allocatable, the shapes table) still run after these.
`tests/stacks/test_numeric_bounds.py` fails when a numeric setting has no upper bound.
"""

from __future__ import annotations

from typing import Final

# Kubernetes validates runAsUser / runAsGroup / fsGroup in 0..2147483647 (k8s.io/kubernetes
# pkg/apis/core/validation, "must be between 0 and 2147483647, inclusive"); Cloud Run's mount and the
# image's user are Linux ids, the same signed 32-bit range.
MAX_POSIX_ID: Final = 2**31 - 1
# The Budget API's amount is a google.type.Money: `units` is an int64 of whole currency units.
MAX_BUDGET_UNITS: Final = 2**63 - 1
# Far above any machine Google rents (the largest have a few thousand vCPUs and a few TiB of memory): a
# number above these is a typo, and the node or platform check names the real limit below them.
MAX_VCPUS: Final = 4096
MAX_MEMORY_GIB: Final = 65536
# Accelerators on one machine: no GPU machine type has more than 16, no single-host TPU slice more than 8.
MAX_ACCELERATORS_PER_NODE: Final = 16
# A checkpoint's size and parameters: far above the largest open checkpoints (a few TB, ~10^12 parameters).
MAX_WEIGHT_BYTES: Final = 2**50  # 1 PiB
MAX_PARAMETERS: Final = 10**15
# vLLM's per-accelerator runtime overhead: more than any accelerator's whole memory (the largest hold 192 GB).
MAX_RUNTIME_OVERHEAD_GIB: Final = 1024.0
# The longest context a stack may serve (vllm.maxModelLen's bound) and a batch step of 16 such prompts.
MAX_CONTEXT_TOKENS: Final = 1_048_576
MAX_BATCHED_TOKENS: Final = 16 * MAX_CONTEXT_TOKENS
# A duration in a stack file: a year; Google's own limits (7 days for flex-start, 4h for a model load) are
# checked by the keys that have them.
MAX_DURATION_SECONDS: Final = 365 * 24 * 3600
# The HPA's scale-down stabilization window (Kubernetes validates it in 0..3600 s: autoscaling/v2
# HPAScalingRules.stabilizationWindowSeconds, "must be less than or equal to 3600").
MAX_STABILIZATION_SECONDS: Final = 3600
# vLLM's running sequences (vllm.maxNumSeqs), and so a queue per pod an HPA target can mean.
MAX_NUM_SEQS: Final = 4096
# Nodes of one GKE node pool the program asks the autoscaler for, and the replicas they can hold.
MAX_NODES: Final = 1000
MAX_REPLICAS: Final = MAX_NODES * MAX_ACCELERATORS_PER_NODE
# Run:ai Model Streamer threads (default 16, serving/cold_start.py): one per vCPU of the largest host is plenty.
MAX_STREAMER_CONCURRENCY: Final = MAX_VCPUS
# A count of instances beyond any project's quota, so that only a typo meets it; Cloud Run's own per-service
# limit (1000, serving/cloud_run_limits.py) is checked after it with its own message.
MAX_INSTANCES: Final = 10**6
