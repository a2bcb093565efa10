"""The TPU startup script with a kept compile cache (compileCache.keep): restored before vLLM, saved after."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from components.tpu.startup_script import StartupScriptSpec, docker_run_argv, render_startup_script
from serving.compile_cache import TPU_CACHE_ENV, TPU_CACHE_PREFIX, TPU_CONTAINER_CACHE_DIR
from tests.components.test_tpu_startup_script import (
    CACHED,
    SPEC,
    STUBS,
    bash_value,
    boot_twice,
    on_this_machine,
    only_system_tools,
)


def _cached_here(tmp_path: Path) -> StartupScriptSpec:
    return replace(on_this_machine(CACHED, tmp_path), host_cache_dir=str(tmp_path / "xla-cache"))


def test_without_the_setting_the_script_has_no_cache_step() -> None:
    """A stack that does not keep the cache boots exactly as before: no cache line, no writable mount."""
    script = render_startup_script(SPEC)
    assert "compile_cache" not in script
    assert "CACHE_PREFIX" not in script
    assert not any(TPU_CACHE_ENV in arg for arg in docker_run_argv(SPEC))


def test_the_container_reads_and_writes_the_restored_cache() -> None:
    """vLLM must find the restored entries where it looks (VLLM_XLA_CACHE_PATH), on a read-write mount."""
    argv = docker_run_argv(CACHED)
    assert f"{CACHED.host_cache_dir}:{TPU_CONTAINER_CACHE_DIR}" in argv
    assert f"{TPU_CACHE_ENV}={TPU_CONTAINER_CACHE_DIR}" in argv
    assert f"{CACHED.host_model_dir}:{CACHED.model_root}:ro" in argv  # the weights stay read-only
    assert bash_value(render_startup_script(CACHED), "CACHE_PREFIX") == TPU_CACHE_PREFIX


def test_each_boot_restores_before_vllm_and_saves_once_it_serves(tmp_path: Path) -> None:
    """The order a cold node needs: weights, then the cache into the host directory, then vLLM; the save
    goes back to the same folder only after /health answered, and at every boot."""
    spec = _cached_here(tmp_path)
    calls = boot_twice(tmp_path, spec)
    remote = f"gs://my-models-bucket/{TPU_CACHE_PREFIX}"
    steps = []
    for call in calls:
        if call[:3] == ["gcloud", "storage", "rsync"] and remote in call:
            steps.append("restore" if call[-2] == remote else "save")
        elif call[:2] == ["docker", "run"]:
            steps.append("vllm")
        elif call[0] == "curl" and call[-1].endswith("/health"):
            steps.append("health")
    assert steps == ["restore", "vllm", "health", "health", "save"] * 2
    save = next(call for call in calls if call[:3] == ["gcloud", "storage", "rsync"] and call[-1] == remote)
    assert save[-2] == spec.host_cache_dir
    # rsync adds and replaces: nothing in the bucket is ever deleted by a save.
    assert not any("--delete-unmatched-destination-objects" in call for call in calls)


FAILING_CACHE_RSYNC = {
    "gcloud": STUBS["gcloud"].replace(
        'if [[ "$2" == rsync ]]',
        'if [[ "$*" == *compile-cache* ]]; then exit 1; fi\nif [[ "$2" == rsync ]]',
    )
}


def test_an_unreadable_cache_costs_only_the_compile(tmp_path: Path) -> None:
    """A first start (no cache yet) or a cache folder the node cannot read: vLLM still starts and serves."""
    spec = _cached_here(tmp_path)
    calls = boot_twice(tmp_path, spec, FAILING_CACHE_RSYNC)
    assert [call[:2] for call in calls if call[0] == "docker"].count(["docker", "run"]) == 2


UNHEALTHY = {
    "curl": STUBS["curl"].replace(
        "then printf 'my-models-bucket'; fi",
        "then printf 'my-models-bucket'; elif [[ \"${*: -1}\" == */health ]]; then exit 7; fi",
    )
}


def test_a_start_that_never_served_saves_nothing(tmp_path: Path) -> None:
    """A cache written by a start that never became healthy is not pushed over the good one."""
    spec = replace(_cached_here(tmp_path), ready_timeout_seconds=0)
    script = tmp_path / "startup.sh"
    script.write_text(render_startup_script(spec))
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in {**STUBS, **UNHEALTHY}.items():
        (stubs / name).write_text(body)
        (stubs / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {"PATH": f"{stubs}:{only_system_tools(tmp_path)}", "STUB_LOG": str(log), "STUB_DIR": str(tmp_path)}
    bash = shutil.which("bash") or "/bin/bash"
    result = subprocess.run([bash, str(script)], check=False, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "the compile cache is not saved" in result.stderr
    calls = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    assert not [
        call for call in calls if call[:3] == ["gcloud", "storage", "rsync"] and call[-2] == spec.host_cache_dir
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"compile_cache_prefix": "/compile-cache/xla/"}, "compile_cache_prefix"),
        ({"compile_cache_prefix": "compile-cache/xla"}, "ending in '/'"),
        ({"env": {TPU_CACHE_ENV: "/tmp/x"}}, TPU_CACHE_ENV),
        ({"host_cache_dir": "relative/dir"}, "host_cache_dir"),
    ],
)
def test_a_cache_spec_that_would_misplace_it_is_refused(change: dict[str, object], message: str) -> None:
    """A prefix outside the bucket, or a cache path set twice, fails at construction with the field named."""
    with pytest.raises(ValueError, match=message):
        replace(CACHED, **change)  # type: ignore[arg-type]
