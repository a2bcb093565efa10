"""How long a cold start takes before vLLM answers, per way of reading the weights, and how to size the streamer.

Why: the startup probe's window was a hand-set guess (`modelLoadSeconds: 900`) and nothing said what a user
waiting on a scaled-to-zero service meets. Here the window is derived from the checkpoint's bytes and a read
throughput per load mode, each number beside its source; a number no source confirms for Cloud Run says so
(`confirmed=False`) and `verify status` measures the real one (docs/cold-start.md). A leaf module: plain
values in, plain values out.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass

from serving.units import GIB, MB


class LoadMode(enum.StrEnum):
    """How vLLM reads the checkpoint: through a Cloud Storage FUSE mount, or streamed from gs://."""

    FUSE = "fuse"
    STREAM = "stream"


@dataclass(frozen=True)
class ReadThroughput:
    """The sustained read rate assumed for one way of loading, and where the figure comes from."""

    name: str
    bytes_per_s: int
    source: str
    confirmed: bool = False

    def seconds(self, size: int) -> float:
        return size / self.bytes_per_s


# Plain Cloud Storage FUSE (what the shipped stacks mount): Google's GPU best practices say a FUSE mount
# "does not parallelize the download" (cloud.google.com/run/docs/configuring/services/gpu-best-practices,
# read 2026-11). The rate is a field report's: a 31B (about 62 GB in bf16) took about 20 minutes to load on
# an RTX PRO 6000 after scale to zero (leeharden.com/posts/running-gemma4-on-cloud-run, load method not
# stated), i.e. about 52 MB/s for everything; 50 MB/s rounds it down. Not measured here.
FUSE_SEQUENTIAL = ReadThroughput(
    name="fuse",
    bytes_per_s=50 * MB,
    source="a field report: a ~62 GB 31B checkpoint in ~20 min after scale to zero (leeharden.com/posts/"
    "running-gemma4-on-cloud-run, 2026); Google: a FUSE mount does not parallelize the download",
)
# gcsfuse's file cache with parallel downloads: "up to nine times faster model load time"
# (cloud.google.com/storage/docs/cloud-storage-fuse/file-caching, read 2026-11). Three times the plain rate
# is this project's conservative reading of "up to nine"; unconfirmed on Cloud Run.
FUSE_PARALLEL = ReadThroughput(
    name="fuse+parallel-downloads",
    bytes_per_s=150 * MB,
    source="3x the plain FUSE rate; Google: parallel downloads give 'up to nine times faster model load time' "
    "(cloud.google.com/storage/docs/cloud-storage-fuse/file-caching)",
)
# Run:ai Model Streamer: NVIDIA measured Llama-3-8B (15 GB, one safetensors file) in 14.34 s at concurrency
# 16 from a GP3 SSD against 47.99 s for the default loader (developer.nvidia.com/blog/reducing-cold-start-
# latency-for-llm-inference-with-nvidia-runai-model-streamer), ~1.05 GB/s. Half of it is assumed from GCS
# over Direct VPC egress; no published Cloud Run figure was found (2026-11).
STREAM = ReadThroughput(
    name="stream",
    bytes_per_s=500 * MB,
    source="half of NVIDIA's Run:ai Model Streamer figure (15 GB in 14.34 s at concurrency 16 from GP3 SSD, "
    "developer.nvidia.com/blog/reducing-cold-start-latency-for-llm-inference-with-nvidia-runai-model-streamer); "
    "no Cloud Run + GCS figure published",
)

# Before the weights: GPU provisioning ~5 s, image streaming 1-2 s, engine init 5-15 s (Google DevRel, "A
# Guide to AI Cold Starts on Cloud Run", dev.to); vLLM 0.32's own start to "Starting to load model" took 28 s
# on this project's CPU run (tests/verify/ops/fixtures/coldstart). 60 s covers both with room.
ENGINE_START_S = 60
# After the weights: torch.compile and CUDA graph capture ("This usually takes 5~20 seconds", vLLM 0.32
# gpu_model_runner.py capture_model) and the KV-cache profile. 120 s is this project's estimate for a 12B
# without a compile cache; `verify status` measures it.
COMPILE_S = 120
# The window is the estimate times this margin, so a slow read does not kill the instance mid-load.
WINDOW_MARGIN = 1.5


@dataclass(frozen=True)
class ColdStartEstimate:
    """The phases of one cold start as estimated before deploying, in seconds."""

    weight_bytes: int
    throughput: ReadThroughput
    engine_start_s: float = ENGINE_START_S
    compile_s: float = COMPILE_S

    @property
    def weights_s(self) -> float:
        return self.throughput.seconds(self.weight_bytes)

    @property
    def total_s(self) -> float:
        return self.engine_start_s + self.weights_s + self.compile_s

    @property
    def window_s(self) -> int:
        """How long the startup probe should wait: the estimate with its margin, whole seconds."""
        return math.ceil(self.total_s * WINDOW_MARGIN)

    def describe(self) -> str:
        return (
            f"~{self.total_s:.0f} s (engine {self.engine_start_s:.0f} s + {self.weight_bytes / 1e9:.2f} GB at "
            f"{self.throughput.bytes_per_s / MB:.0f} MB/s = {self.weights_s:.0f} s + compile {self.compile_s:.0f} s)"
        )


def throughput_for(mode: LoadMode, *, parallel_downloads: bool = False) -> ReadThroughput:
    if mode is LoadMode.STREAM:
        return STREAM
    return FUSE_PARALLEL if parallel_downloads else FUSE_SEQUENTIAL


# --- the streamer's CPU staging memory and threads ------------------------------------------------------

# Host memory vLLM itself needs beside the streamer's buffer on a GPU instance: the API server, engine core
# and worker processes with torch, CUDA and the tokenizer. 10 GiB is this project's estimate (unconfirmed;
# Cloud Run's memory utilization metric shows the real figure).
VLLM_HOST_RESERVE_GIB = 10
# The streamer's buffer: at least 2 GiB (a few of its chunks per thread; this project's judgment), at most
# 8 GiB (twice the 4 GiB deployments commonly set, e.g. RUNAI_STREAMER_MEMORY_LIMIT=4294967296 in public
# vLLM deployment scripts; more does not read faster once every thread has a chunk in flight).
STREAMER_MIN_MEMORY_GIB = 2
STREAMER_MAX_MEMORY_GIB = 8
# Threads: the library's default and NVIDIA's benchmark setting is 16 (runai-model-streamer docs,
# RUNAI_STREAMER_CONCURRENCY); two per vCPU below that (the threads mostly wait on the network), at
# least 4; at most 4 per vCPU when a stack sets it (more threads than that starve vLLM's own start).
STREAMER_DEFAULT_CONCURRENCY = 16
STREAMER_MIN_CONCURRENCY = 4
STREAMER_MAX_THREADS_PER_CPU = 4


@dataclass(frozen=True)
class StreamerSizing:
    """`--model-loader-extra-config` for runai_streamer (vLLM 0.32 accepts distributed, concurrency, memory_limit)."""

    concurrency: int
    memory_limit_gib: int

    @property
    def memory_limit_bytes(self) -> int:
        return self.memory_limit_gib * GIB

    def extra_config(self) -> dict[str, int]:
        return {"concurrency": self.concurrency, "memory_limit": self.memory_limit_bytes}


def size_streamer(
    *,
    cpu: int,
    memory_gib: int,
    concurrency: int | None = None,
    memory_limit_gib: int | None = None,
    keys: tuple[str, str] = ("concurrency", "memoryLimitGib"),
) -> StreamerSizing | list[str]:
    """The streamer's threads and buffer for an instance, or why they cannot fit beside vLLM."""
    problems = []
    available = memory_gib - VLLM_HOST_RESERVE_GIB
    if available < STREAMER_MIN_MEMORY_GIB:
        problems.append(
            f"{memory_gib} GiB of instance memory leaves {available} GiB beside vLLM's ~{VLLM_HOST_RESERVE_GIB} GiB; "
            f"the streamer needs at least {STREAMER_MIN_MEMORY_GIB} GiB to stage weights: raise the memory"
        )
    if memory_limit_gib is not None and memory_limit_gib > available:
        problems.append(
            f"{keys[1]}: {memory_limit_gib} GiB does not fit beside vLLM (~{VLLM_HOST_RESERVE_GIB} GiB) in "
            f"{memory_gib} GiB; allowed: {STREAMER_MIN_MEMORY_GIB}-{max(available, STREAMER_MIN_MEMORY_GIB)}"
        )
    most_threads = STREAMER_MAX_THREADS_PER_CPU * cpu
    if concurrency is not None and concurrency > most_threads:
        problems.append(
            f"{keys[0]}: {concurrency} threads on {cpu} vCPU would starve vLLM's own start; allowed: "
            f"1-{most_threads} ({STREAMER_MAX_THREADS_PER_CPU} per vCPU)"
        )
    if problems:
        return problems
    threads = concurrency or min(STREAMER_DEFAULT_CONCURRENCY, max(STREAMER_MIN_CONCURRENCY, 2 * cpu))
    memory = memory_limit_gib or min(available, STREAMER_MAX_MEMORY_GIB)
    return StreamerSizing(concurrency=threads, memory_limit_gib=memory)


# --- where the streamer is known not to work ------------------------------------------------------------

TPU_QAT_STREAM_ISSUE = "https://github.com/vllm-project/tpu-inference/issues/3225"
_QAT = re.compile(r"(^|[-_.])qat([-_.]|$)", re.IGNORECASE)


def is_qat_checkpoint(model_path: str) -> bool:
    """Google's quantization-aware-trained checkpoints carry `qat` in their name (gemma-4-12B-it-qat-w4a16-ct)."""
    return bool(_QAT.search(model_path.rstrip("/").rsplit("/", 1)[-1]))


def tpu_stream_problem(model_path: str) -> str:
    """Why a TPU stack cannot stream its weights (the QAT reason first: it would fail even once wired)."""
    if is_qat_checkpoint(model_path):
        return (
            f"model.load: stream on TPU with the QAT checkpoint {model_path!r} is known not to work: tpu-inference "
            "loads Gemma 4 QAT checkpoints with a k_norm for every layer, which the KV-shared layers do not have, "
            f"and with --load-format runai_streamer it fails later with a TypeError ({TPU_QAT_STREAM_ISSUE}, open); "
            "use model.load: fuse (the node copies the weights to its disk)"
        )
    return (
        "model.load: stream is not wired for TPU stacks here: the node copies the weights from the bucket to its "
        "own disk before vLLM starts (components/tpu/startup_script.py); use model.load: fuse"
    )
