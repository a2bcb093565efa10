"""Where a vLLM serving container listens and finds its weights, unless a stack says otherwise.

Why one place: the stack settings' defaults, the components' Args defaults, the TPU VM's start-up script
and the policy pack's firewall rule all assume the same port and model folder; each restating them could
drift (a component used without a stack file listening elsewhere than the firewall rule guards).
"""

from __future__ import annotations

# vLLM's own default for `vllm serve --port` (serving/data/vllm-0.32-serve-flags.json).
VLLM_PORT = 8000
# Where the model bucket's checkpoints appear inside the serving container (Cloud Storage FUSE on Cloud
# Run and GKE; the VM's local copy, mounted read-only, on a TPU node); the serve arguments' model path
# and the speculative drafter's path are under it.
MODEL_ROOT = "/mnt/models"
