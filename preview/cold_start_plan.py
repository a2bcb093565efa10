"""The plan's cold-start section and notes: how the weights are read, the estimate the probe window comes from.

Why in the plan: a stack that scales to zero makes its first user wait for a whole cold start; the reviewer
should see that wait (and what it was derived from) before `pulumi up`, not learn it from a complaint. The
measured phases come later from `verify status` (docs/cold-start.md).
"""

from __future__ import annotations

from typing import Any, assert_never

from serving.cold_start import WINDOW_MARGIN, ColdStartEstimate
from serving.compile_cache import (
    GPU_CACHE_ENV,
    GPU_CACHE_PREFIX,
    GPU_CONTAINER_CACHE_DIR,
    TPU_CACHE_ENV,
    TPU_CACHE_PREFIX,
    TPU_CONTAINER_CACHE_DIR,
)
from stacks.model_load import FuseLoad, StreamLoad
from stacks.settings import CloudRunStack, GkeStack, StackSettings, TpuStack

DOCS = "docs/cold-start.md"
# What vLLM 0.32 can reuse from an earlier start, per platform, and whether this stack keeps it
# (compileCache.keep, serving/compile_cache.py).
GPU_COMPILE_CACHE = (
    "not kept between revisions (compileCache unset): vLLM 0.32 reads torch.compile's cache from a path "
    "(VLLM_CACHE_ROOT, default ~/.cache/vllm/torch_compile_cache), and a Cloud Run instance's disk is memory "
    "that dies with it; compileCache: true mounts the bucket's compile-cache/ folder there read-write "
    "(docs/cold-start.md)"
)
TPU_COMPILE_CACHE = (
    "not kept between node runs (compileCache unset): vLLM on TPU reads its XLA cache from VLLM_XLA_CACHE_PATH "
    "(a path on the node); compileCache: true restores it from the bucket before each start and saves it once "
    "vLLM serves (docs/cold-start.md)"
)

GKE_COMPILE_CACHE = (
    "not kept between pods: vLLM reads its compile cache from a path (VLLM_CACHE_ROOT on GPU, VLLM_XLA_CACHE_PATH on "
    "TPU) and the fleet mounts no writable volume for it (docs/cold-start.md)"
)


def _load_text(settings: CloudRunStack) -> str:
    load = settings.model.load
    match load:
        case StreamLoad():
            sizing = settings.streamer
            buffer = f"{sizing.concurrency} threads, {sizing.memory_limit_gib} GiB CPU buffer" if sizing else "?"
            return (
                f"stream: vLLM reads {settings.model_root}/ with --load-format runai_streamer ({buffer}) over Direct "
                f"VPC egress (network {load.network}, subnet {load.subnet}); no FUSE mount"
            )
        case FuseLoad():
            if load.parallel_downloads:
                return f"fuse: Cloud Storage FUSE with a {load.file_cache_gib} GiB file cache and parallel downloads"
            return "fuse: Cloud Storage FUSE mount, read as files (no parallel downloads)"
        case _ as unreachable:
            assert_never(unreachable)


# How each platform keeps the cache when compileCache.keep is set: (prefix in the bucket, how vLLM reaches it).
GPU_KEPT = (
    GPU_CACHE_PREFIX,
    (
        f"a read-write Cloud Storage volume at {GPU_CONTAINER_CACHE_DIR} = {GPU_CACHE_ENV}; vLLM loads torch.compile's "
        "artifacts of the same configuration from it and compiles again when it cannot"
    ),
)
TPU_KEPT = (
    TPU_CACHE_PREFIX,
    (
        f"the startup script restores it to the node before vLLM starts ({TPU_CACHE_ENV}={TPU_CONTAINER_CACHE_DIR}) "
        "and saves it once vLLM answers /health"
    ),
)


def _cache_text(settings: StackSettings, not_kept: str, kept: tuple[str, str]) -> str:
    """The plan's compile-cache row: not kept (and how to keep it), or where it is kept and who may write it."""
    if not settings.compile_cache.keep:
        return not_kept
    prefix, how = kept
    bucket = settings.bucket.name or "<the model bucket>"
    return (
        f"kept in gs://{bucket}/{prefix} (the serving identity may write the bucket's compile-cache/ folder only, "
        f"never the weights; objects deleted {settings.compile_cache.max_age_days} days after they were written): "
        f"{how} ({DOCS})"
    )


def _estimate_rows(estimate: ColdStartEstimate | None, window: int, explicit: bool) -> list[tuple[str, str]]:
    if estimate is None:
        return [
            ("checkpoint", "size unknown (no built-in profile; capacity.weightBytes sets it)"),
            ("probe window", f"{window} s ({'cloudRun.modelLoadSeconds' if explicit else 'the default'})"),
        ]
    rate = estimate.throughput
    how = "cloudRun.modelLoadSeconds" if explicit else f"the estimate x {WINDOW_MARGIN:g}, capped at Cloud Run's limit"
    return [
        ("checkpoint", f"{estimate.weight_bytes / 1e9:.2f} GB read at start (model and drafter)"),
        ("read rate", f"{rate.bytes_per_s / 1e6:.0f} MB/s ({'' if rate.confirmed else 'unconfirmed: '}{rate.source})"),
        ("estimate", estimate.describe()),
        ("probe window", f"{window} s ({how})"),
    ]


def cold_start_rows(settings: StackSettings) -> list[tuple[str, str]]:
    """(label, value) rows of the section, for the text and the JSON plan alike."""
    match settings:
        case CloudRunStack():
            run = settings.cloud_run
            budget = run.max_cold_start_seconds
            return [
                ("load mode", _load_text(settings)),
                *_estimate_rows(
                    settings.cold_start_estimate(), settings.startup_load_seconds, run.model_load_seconds is not None
                ),
                ("compile cache", _cache_text(settings, GPU_COMPILE_CACHE, GPU_KEPT)),
                (
                    "budget",
                    f"cloudRun.maxColdStartSeconds {budget} s: gemma-verify promote refuses a slower candidate"
                    if budget
                    else "none (cloudRun.maxColdStartSeconds unset: gemma-verify promote does not gate on it)",
                ),
                ("measured", f"gemma-verify status --stack <stack> shows the phases ({DOCS})"),
            ]
        case TpuStack():
            return [
                ("load mode", "fuse: the node copies the weights from the bucket to its disk before vLLM starts"),
                ("compile cache", _cache_text(settings, TPU_COMPILE_CACHE, TPU_KEPT)),
                ("measured", f"gemma-verify status --stack <stack> shows the phases ({DOCS})"),
            ]
        case GkeStack():
            return [
                ("load mode", "fuse: each replica mounts the bucket through the Cloud Storage FUSE CSI driver"),
                ("compile cache", GKE_COMPILE_CACHE),
            ]
        case _ as unreachable:
            assert_never(unreachable)


def cold_start_lines(settings: StackSettings) -> list[str]:
    return ["Cold start:", *(f"  {label:<14} {value}" for label, value in cold_start_rows(settings)), ""]


def cold_start_document(settings: StackSettings) -> dict[str, Any]:
    """The `coldStart` key of the FORMAT=json plan: the same rows, keys in camelCase like the rest of it."""
    return {_camel(label): value for label, value in cold_start_rows(settings)}


def _camel(label: str) -> str:
    first, *rest = label.split()
    return first + "".join(word.capitalize() for word in rest)


def cold_start_notes(settings: StackSettings) -> list[str]:
    """What the deployer must enable for the load mode, and what a scale-to-zero stack's first user meets."""
    if not isinstance(settings, CloudRunStack):
        return []
    notes = []
    load = settings.model.load
    if isinstance(load, StreamLoad):
        notes.append(
            f"network: vLLM streams gs:// over Direct VPC egress (all traffic) on network {load.network!r}, subnet "
            f"{load.subnet!r} in {settings.region}: both must exist, and the subnet needs Private Google Access "
            f"(`gcloud compute networks subnets update {load.subnet} --region {settings.region} "
            "--enable-private-ip-google-access`) or the streamer cannot reach storage.googleapis.com; the subnet "
            "needs free addresses for the instances (Cloud Run's Direct VPC egress page)."
        )
    estimate = settings.cold_start_estimate()
    if settings.cloud_run.min_instances == 0:
        wait = f"about {estimate.total_s:.0f} s by the estimate" if estimate else "a whole cold start"
        notes.append(
            f"cold start: cloudRun.minInstances is 0, so the first request after the service scaled to zero waits "
            f"for an instance to start and load the model: {wait} (up to the {settings.startup_load_seconds} s probe "
            f"window). `gemma-verify status` measures it; minInstances: 1 avoids it at the price of a warm instance."
        )
    return notes
