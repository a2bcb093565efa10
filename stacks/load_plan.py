"""What a stack's `model.load` means for its Cloud Run service: vLLM arguments, mount options, probe window.

Why apart from the settings: the load mode touches the model path (a mount or gs://), vLLM's loader
flags, the instance's memory (the streamer's buffer, gcsfuse's file cache), the network (Direct VPC egress)
and the startup probe (derived from the checkpoint's bytes). Each rule is here once, read by
`CloudRunStack` (stacks/cloud_run_stack.py) and the TPU refusal; the numbers are serving/cold_start.py's.
"""

from __future__ import annotations

import json

from serving.cloud_run_limits import GPU_STARTUP_PROBE_MAX_SECONDS
from serving.cold_start import (
    VLLM_HOST_RESERVE_GIB,
    ColdStartEstimate,
    LoadMode,
    StreamerSizing,
    size_streamer,
    throughput_for,
)
from serving.model_profiles import find_builtin_profile
from stacks.cloud_run import CloudRunSettings
from stacks.model_load import FuseLoad, ModelLoad, StreamLoad

STREAMER_LOAD_FORMAT = "runai_streamer"
# Flags the stream mode renders itself; a stack must not set them another way.
_LOADER_FLAGS = ("--load-format", "--model-loader-extra-config")


def streamer_sizing(load: StreamLoad, run: CloudRunSettings) -> StreamerSizing | list[str]:
    return size_streamer(
        cpu=run.cpu,
        memory_gib=run.memory_gib,
        concurrency=load.concurrency,
        memory_limit_gib=load.memory_limit_gib,
        keys=("model.load.concurrency", "model.load.memoryLimitGib"),
    )


def load_problems(
    load: ModelLoad,
    *,
    bucket_name: str | None,
    load_format: str | None,
    extra_args: tuple[str, ...],
    run: CloudRunSettings,
) -> list[str]:
    """Why this load mode cannot work on this instance, each naming its key (empty when it can)."""
    if isinstance(load, FuseLoad):
        cache = load.file_cache_gib
        room = run.memory_gib - VLLM_HOST_RESERVE_GIB
        if cache is not None and cache > room:
            problem = (
                f"model.load.fileCacheGib: {cache} GiB of gcsfuse file cache lives in the instance's memory and does "
                f"not fit beside vLLM (~{VLLM_HOST_RESERVE_GIB} GiB) in cloudRun.memoryGib {run.memory_gib}; "
                f"allowed: 1-{max(room, 1)}"
            )
            return [problem]
        return []
    problems = []
    if bucket_name is None:
        problems.append(
            "bucket.name: model.load: stream puts gs://<bucket>/<path> in vLLM's arguments, so the bucket needs a "
            "name known before it exists; set bucket.name (global, e.g. <your-project-id>-gemma-models)"
        )
    if load_format not in (None, STREAMER_LOAD_FORMAT):
        problems.append(
            f"vllm.loadFormat: {load_format!r} contradicts model.load: stream, which reads with "
            f"{STREAMER_LOAD_FORMAT}; leave vllm.loadFormat unset"
        )
    flags = sorted({arg.partition("=")[0] for arg in extra_args} & set(_LOADER_FLAGS))
    if flags:
        problems.append(f"vllm.extraArgs: {flags} are rendered by model.load: stream; set model.load instead")
    sizing = streamer_sizing(load, run)
    if isinstance(sizing, list):
        problems += [f"model.load: {problem}" if not problem.startswith("model.") else problem for problem in sizing]
    return problems


def loader_args(load: ModelLoad, run: CloudRunSettings) -> list[str]:
    """vLLM's loader flags for the mode: none for fuse; runai_streamer and its sized extra config for stream."""
    if not isinstance(load, StreamLoad):
        return []
    sizing = streamer_sizing(load, run)
    if isinstance(sizing, list):  # pragma: no cover - the settings refuse it first
        raise ValueError("; ".join(sizing))
    return [
        "--load-format",
        STREAMER_LOAD_FORMAT,
        "--model-loader-extra-config",
        json.dumps(sizing.extra_config(), separators=(",", ":")),
    ]


def checkpoint_bytes(model_dirs: list[str], *, override: int | None) -> int | None:
    """The bytes vLLM reads at start (model and drafter) from the built-in profiles; None when one is unknown."""
    total = 0
    for index, directory in enumerate(model_dirs):
        if index == 0 and override is not None:
            total += override
            continue
        profile = find_builtin_profile(directory)
        if profile is None:
            return None
        total += profile.weight_bytes
    return total


def cold_start_estimate(load: ModelLoad, size: int | None) -> ColdStartEstimate | None:
    if size is None:
        return None
    mode = LoadMode.STREAM if isinstance(load, StreamLoad) else LoadMode.FUSE
    parallel = isinstance(load, FuseLoad) and load.parallel_downloads
    return ColdStartEstimate(weight_bytes=size, throughput=throughput_for(mode, parallel_downloads=parallel))


def derived_load_seconds(estimate: ColdStartEstimate | None, run: CloudRunSettings) -> int | None:
    """The probe window the estimate asks for, within Cloud Run's GPU cap; None without an estimate."""
    if estimate is None:
        return None
    longest = run.startup_probe.initial_delay_seconds + GPU_STARTUP_PROBE_MAX_SECONDS
    return min(estimate.window_s, longest)
